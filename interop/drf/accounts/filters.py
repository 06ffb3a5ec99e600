from django_filters import rest_framework as filters

from .models import Account


class CharInFilter(filters.BaseInFilter, filters.CharFilter):
    """A comma list (?team__in=a,b): django-filter splits the value on every
    comma, with no way to quote one."""


class AccountFilter(filters.FilterSet):
    status = filters.CharFilter(field_name="status", lookup_expr="exact")
    status__in = CharInFilter(field_name="status", lookup_expr="in")
    team = filters.CharFilter(field_name="team", lookup_expr="exact")
    team__in = CharInFilter(field_name="team", lookup_expr="in")
    owner = filters.CharFilter(field_name="owner", lookup_expr="exact")
    owner__isnull = filters.BooleanFilter(field_name="owner", lookup_expr="isnull")

    class Meta:
        model = Account
        fields = []
