.PHONY: run test setup bench

# Set everything up and serve the app on http://127.0.0.1:8000 (embedded defaults, no keys).
run:
	scripts/run.sh

# Set everything up and run the whole test suite (lint, types, pytest incl. browser + model).
test:
	scripts/test.sh

setup:
	scripts/setup.sh --dev
