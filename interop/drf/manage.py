#!/usr/bin/env python3
"""Django's command-line utility, for maintaining this app by hand
(makemigrations). The tests start serve.py instead."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airlockdrf.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
