from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Planning sessions"

    def ready(self) -> None:
        from conversations import (
            signals,  # noqa: F401 (connects the receivers)
            stale,  # noqa: F401 (plans record what they rest on)
        )
