from rest_framework import status, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from . import faults
from .filters import AccountFilter
from .models import Account
from .pagination import ExpiringCursorPagination, OffsetPagination, PagePagination
from .serializers import AccountSerializer


class AccountViewSet(viewsets.ModelViewSet):
    queryset = Account.objects.all().order_by("id")
    serializer_class = AccountSerializer
    filterset_class = AccountFilter
    # Lists and detail reads, and PATCH; no create, replace or delete.
    http_method_names = ["get", "patch", "head", "options"]


class PageAccountViewSet(AccountViewSet):
    pagination_class = PagePagination


class OffsetAccountViewSet(AccountViewSet):
    pagination_class = OffsetPagination


class CursorAccountViewSet(AccountViewSet):
    pagination_class = ExpiringCursorPagination


class FaultsView(APIView):
    """GET answers the knobs; POST sets them (see faults.py). Every field of
    the body is optional; an unknown field or a bad value is a 400 naming it."""

    known = {"expire_cursors", "expired_status", "max_age_seconds"}

    def get(self, request):
        return Response(faults.state())

    def post(self, request):
        body = request.data if isinstance(request.data, dict) else None
        if body is None:
            return Response({"non_field_errors": ["Expected a JSON object."]}, status=status.HTTP_400_BAD_REQUEST)
        errors = {}
        for key in sorted(set(body) - self.known):
            errors[key] = ["Unknown knob."]
        current = faults.state()
        expire = body.get("expire_cursors", current["expire_cursors"])
        if not isinstance(expire, bool):
            errors["expire_cursors"] = ["Must be true or false."]
        expired_status = body.get("expired_status", current["expired_status"])
        if not isinstance(expired_status, int) or isinstance(expired_status, bool) or expired_status not in faults.EXPIRED_DETAIL:
            errors["expired_status"] = ["Must be 410 or 400."]
        max_age = body.get("max_age_seconds", current["max_age_seconds"])
        if max_age is not None and (isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or max_age < 0):
            errors["max_age_seconds"] = ["Must be a number of seconds, at least 0, or null."]
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(faults.update(expire, expired_status, max_age))
