.PHONY: run test setup scaled bench-scaleout bench-retrieval bench-llm bench-fuzz bench-hostile bench-grounding bench-load

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

# Retrieval quality on ../shared/bench/swe-dev (ours vs naive vs BM25; the definitions a plan
# may change), indexing throughput, re-index speed-up, latency at 100k chunks, Vietnamese vs
# English. See docs/retrieval.md.
bench-retrieval:
	.venv/bin/python bench/retrieval/swe_dev.py --naive-max-mb 2
	.venv/bin/python bench/retrieval/definitions.py
	.venv/bin/python bench/retrieval/indexing.py
	.venv/bin/python bench/retrieval/encoder.py
	.venv/bin/python bench/retrieval/latency.py
	.venv/bin/python bench/retrieval/vietnamese.py

# The local model: our provider vs raw xllamacpp, follow-up turn cold vs warm, two generations
# at once vs one; then page latency while it generates. Results: bench/RESULTS-llm.md.
bench-llm:
	.venv/bin/python bench/llm_local.py
	.venv/bin/python bench/llm_web_latency.py

# 10,000+ hostile inputs to every upload parser and 10,000+ malformed websocket frames: crashes
# counted (0 expected), memory checked.
bench-fuzz:
	.venv/bin/python bench/fuzz/parsers.py --inputs 10000
	.venv/bin/python bench/fuzz/websocket.py --frames 10000

# Other users' page latency while an anonymous client posts 100 MB bodies.
bench-hostile:
	.venv/bin/python bench/hostile_post.py

# Planning sessions on the local model, grounded or not: gold file in the plan, invented paths,
# steps citing real path:line, calls/tokens/time; investigation off vs on, 12 swe-dev instances.
# Packs: bash ../shared/bench/swe-dev/build_corpus.sh OUT (OUT outside this git checkout: Repomix
# honours its .gitignore, which lists var/) and link OUT to var/swe-dev.
bench-grounding:
	nice -n 5 .venv/bin/python bench/grounding.py

# Many sessions, one machine: 1, 2 and 4 concurrent planning sessions on the local model, in
# process and scaled (one model server), then beside a cold index of astropy (swe-dev corpus,
# >10k chunks); resident memory over 20 upload + session cycles. Run it alone.
bench-load:
	.venv/bin/python bench/load.py --topology inprocess,scaled --sessions 1,2,4
	.venv/bin/python bench/load.py --topology inprocess,scaled --sessions 2 \
		--cold-pack var/swe-dev/packs/astropy-5.3.xml --note "beside a cold index"
	.venv/bin/python bench/memory_cycles.py --cycles 20 --profile local-1.5b
