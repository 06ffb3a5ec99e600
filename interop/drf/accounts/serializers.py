from django.db.models import F
from django.utils import timezone
from rest_framework import serializers

from .models import Account


class AccountSerializer(serializers.ModelSerializer):
    class Meta:
        model = Account
        fields = ["id", "name", "status", "team", "owner", "version", "updated_at"]
        # A PATCH changes status, team and owner; the server keeps the rest.
        read_only_fields = ["id", "name", "version", "updated_at"]

    def update(self, instance, validated_data):
        # One UPDATE statement bumps the version, so that concurrent PATCHes
        # of one account each count.
        Account.objects.filter(pk=instance.pk).update(
            version=F("version") + 1, updated_at=timezone.now(), **validated_data
        )
        instance.refresh_from_db()
        return instance
