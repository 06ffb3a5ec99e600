from django.urls import include, path
from rest_framework.routers import SimpleRouter

from accounts import views

# The same accounts, served three ways: one router per pagination style.
routers = {
    "page": views.PageAccountViewSet,
    "offset": views.OffsetAccountViewSet,
    "cursor": views.CursorAccountViewSet,
}

urlpatterns = [path("api/_faults/", views.FaultsView.as_view())]
for prefix, viewset in routers.items():
    router = SimpleRouter()
    router.register("accounts", viewset, basename=prefix + "-accounts")
    urlpatterns.append(path("api/%s/" % prefix, include(router.urls)))
