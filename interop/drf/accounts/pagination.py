import time
from base64 import b64decode, b64encode
from urllib import parse

from rest_framework.pagination import CursorPagination, LimitOffsetPagination, PageNumberPagination
from rest_framework.utils.urls import replace_query_param

from . import faults


class PagePagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class OffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


class ExpiringCursorPagination(CursorPagination):
    """DRF's cursor pagination by id, whose cursor also carries when it was
    issued (a generation and a time), as Slack-like APIs do, so that the
    fault knob can expire it."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def encode_cursor(self, cursor):
        tokens = {}
        if cursor.offset != 0:
            tokens["o"] = str(cursor.offset)
        if cursor.reverse:
            tokens["r"] = "1"
        if cursor.position is not None:
            tokens["p"] = cursor.position
        tokens["g"] = str(faults.generation())
        tokens["t"] = "%.6f" % time.time()
        querystring = parse.urlencode(tokens, doseq=True)
        encoded = b64encode(querystring.encode("ascii")).decode("ascii")
        return replace_query_param(self.base_url, self.cursor_query_param, encoded)

    def decode_cursor(self, request):
        # DRF's own decoding first: a malformed cursor stays 404 "Invalid cursor".
        cursor = super().decode_cursor(request)
        if cursor is None:
            return None
        encoded = request.query_params.get(self.cursor_query_param)
        tokens = parse.parse_qs(b64decode(encoded.encode("ascii")).decode("ascii"))
        try:
            issued_generation = int(tokens.get("g", ["0"])[0])
            issued_at = float(tokens.get("t", ["0"])[0])
        except ValueError:
            issued_generation, issued_at = 0, 0.0
        faults.check_cursor(issued_generation, issued_at)
        return cursor
