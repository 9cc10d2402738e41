from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agents.model_queue import people_waiting
        from agents.providers.remote import install_log_scrubbing
        from planagents.nice import people_busy_when

        install_log_scrubbing()
        people_busy_when(people_waiting)  # a codebase's index waits for people's turns
