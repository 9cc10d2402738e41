from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents.providers.remote import install_log_scrubbing

        install_log_scrubbing()
