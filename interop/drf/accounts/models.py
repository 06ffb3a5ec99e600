from django.db import models


class Account(models.Model):
    STATUSES = [("active", "active"), ("disabled", "disabled"), ("archived", "archived")]

    name = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=STATUSES)
    team = models.CharField(max_length=100)
    # No owner is written two ways in the seeded data: NULL and "".
    owner = models.CharField(max_length=200, null=True, blank=True)
    version = models.IntegerField(default=1)
    # Not auto_now: the seed writes its own times, and an update sets it.
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
