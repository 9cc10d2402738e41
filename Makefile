.PHONY: run test setup scaled bench-scaleout bench-retrieval bench-llm

# Set everything up and serve the app on http://127.0.0.1:8000 (embedded defaults, no keys).
run:
	scripts/run.sh

# Set everything up and run the whole test suite (lint, types, pytest incl. browser + model).
test:
	scripts/test.sh

setup:
	scripts/setup.sh --dev

# The scaled topology on one machine: two ASGI servers (ports 8001, 8002) and two Celery
# workers, against this machine's PostgreSQL and Redis (started if stopped).
scaled:
	scripts/scaled.sh

# N concurrent scripted sessions against the scaled topology, 1 then 2 workers.
bench-scaleout:
	.venv/bin/python bench/scaleout/load.py

# Retrieval quality on ../shared/bench/swe-dev (ours vs naive vs BM25), indexing throughput,
# re-index speed-up, latency at 100k chunks, Vietnamese vs English. See docs/retrieval.md.
bench-retrieval:
	.venv/bin/python bench/retrieval/swe_dev.py --naive-max-mb 2
	.venv/bin/python bench/retrieval/indexing.py
	.venv/bin/python bench/retrieval/latency.py
	.venv/bin/python bench/retrieval/vietnamese.py

# The local model through our provider vs raw llama_cpp on the same prompt.
bench-llm:
	.venv/bin/python bench/llm_local.py
