from django.urls import path

from sessions_app.api import views

# <str:...>, not <uuid:...>: a malformed id must reach the view and get the
# same 404 as any other miss, not Django's own HTML 404.
urlpatterns = [
    path("sessions", views.SessionCreateView.as_view(), name="session-create"),
    path("sessions/<str:session_id>", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<str:session_id>/messages", views.SessionMessagesView.as_view(), name="session-messages"),
    path("sessions/<str:session_id>/export", views.SessionExportView.as_view(), name="session-export"),
    path("sessions/<str:session_id>/plan", views.SessionPlanView.as_view(), name="session-plan"),
]
