"""Starts the accounts API for airlock's interop tests.

    /usr/bin/python3 -B serve.py --db PATH --seed FILE --port N

It creates the SQLite database at PATH (which must not exist yet) with the
committed migration, loads the accounts in FILE (a JSON list written by the
harness, interop/upstreams/drf.go), and serves on 127.0.0.1:N until killed.

The server is the standard library's WSGI server with a thread per request
rather than `manage.py runserver`: it has no autoreloader or dev-server
banner, it binds only after the data is in place (so the first answer is a
ready one), and a port that is taken makes it exit at once with status 3,
which the harness reads as "try another port".
"""

import argparse
import json
import os
import socketserver
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

HERE = os.path.dirname(os.path.abspath(__file__))


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = False
    # socketserver's default backlog is 5: too few for a commit's workers
    # and a scan at once.
    request_queue_size = 128


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the stdlib's name)
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    sys.path.insert(0, HERE)
    os.environ["AIRLOCK_DRF_DB"] = args.db
    os.environ["DJANGO_SETTINGS_MODULE"] = "airlockdrf.settings"
    if os.path.exists(args.db):
        sys.exit("serve.py: %s exists; give a new path" % args.db)

    import django

    django.setup()
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from django.db import connection, transaction
    from django.utils.dateparse import parse_datetime

    call_command("migrate", verbosity=0, interactive=False)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")

    from accounts.models import Account

    with open(args.seed, encoding="utf-8") as f:
        rows = json.load(f)
    with transaction.atomic():
        Account.objects.bulk_create(
            [
                Account(
                    id=r["id"],
                    name=r["name"],
                    status=r["status"],
                    team=r["team"],
                    owner=r["owner"],
                    version=r["version"],
                    updated_at=parse_datetime(r["updated_at"]),
                )
                for r in rows
            ],
            batch_size=500,
        )
    connection.close()

    app = get_wsgi_application()
    try:
        server = make_server("127.0.0.1", args.port, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler)
    except OSError as e:
        print("serve.py: cannot listen on 127.0.0.1:%d: %s" % (args.port, e), file=sys.stderr)
        sys.exit(3)
    print("serving %d accounts on http://127.0.0.1:%d" % (len(rows), args.port), file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
