from django.apps import AppConfig


class RagConfig(AppConfig):
    name = "rag"
    verbose_name = "Codebases"

    def ready(self) -> None:
        from rag import signals  # noqa: F401  (connects the receivers)
