"""`manage.py llm_server`: the machine's one model server. It loads each local model once and
serves it on a port of its own (PLANAGENTS_LLM_SERVER's port + the profile's place among the
local profiles) through llama.cpp's OpenAI-compatible API; every process started with
PLANAGENTS_LLM_SERVER set reaches it there (agents.providers.shared) instead of loading its own
copy. Runs until SIGTERM or Ctrl-C.

    manage.py llm_server                          the default profile and the fallback one
    manage.py llm_server --profiles local-1.5b    only that model
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

DEFAULT_PORT = 8090


class Command(BaseCommand):
    help = "Serve the local models once for every process of this machine (issue 20)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--profiles",
            default="",
            help="comma-separated local profiles (default: the default and fallback profiles)",
        )
        parser.add_argument(
            "--port",
            type=int,
            default=0,
            help=f"base port (default: PLANAGENTS_LLM_SERVER's, else {DEFAULT_PORT})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise CommandError("xllamacpp is not installed. Run: scripts/setup.sh") from exc
        from agents.providers import PROFILES
        from agents.providers.local import ModelLoadError, server_params, start_server
        from agents.providers.shared import local_profiles, server_key
        from agents.providers.weights import ensure_weights

        base = options["port"] or urlsplit(settings.PLANAGENTS_LLM_SERVER or "").port
        base = base or DEFAULT_PORT
        wanted = [p.strip() for p in options["profiles"].split(",") if p.strip()] or list(
            dict.fromkeys(
                [settings.PLANAGENTS_DEFAULT_PROFILE, settings.PLANAGENTS_FALLBACK_PROFILE]
            )
        )
        local = local_profiles()
        unknown = [p for p in wanted if p not in local]
        if unknown:
            raise CommandError(
                f"Not local profiles: {', '.join(unknown)}. Local ones: {', '.join(local)}."
            )
        key = server_key(create=True)
        servers = []
        for name in wanted:
            spec = next(p.weights for p in PROFILES if p.name == name and p.weights)
            port = base + local.index(name)
            started = time.monotonic()
            params = server_params(xllamacpp, spec, ensure_weights(spec), api_key=key, port=port)
            try:
                servers.append(start_server(xllamacpp, params))
            except RuntimeError as exc:
                raise ModelLoadError(f"llama.cpp could not load {spec.name}: {exc}") from exc
            self.stdout.write(
                f"llm_server: {name} ({spec.name}) on http://127.0.0.1:{port}, loaded in "
                f"{time.monotonic() - started:.1f} s, {params.n_parallel} slots, "
                f"{params.cpuparams.n_threads} threads",
            )
        self.stdout.write(
            f"llm_server: ready; start the other processes with "
            f"PLANAGENTS_LLM_SERVER=http://127.0.0.1:{base}",
        )
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        self.stdout.write("llm_server: stopping")
        servers.clear()  # each server stops its threads as it is freed
