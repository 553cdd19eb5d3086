# The one command that runs every test is `make check` (CI runs it via .ci/run).
.DEFAULT_GOAL := check

.PHONY: check conformance demo tools

# gofmt, go vet, go test -race and the official MCP conformance suite.
check:
	bash scripts/check.sh

# Only the conformance suite (installs Node 22 + the suite into .tools/ on first use).
conformance:
	bash scripts/conformance.sh

# Install Node 22 and the conformance suite into .tools/.
tools:
	bash scripts/tools.sh

demo:
	go run ./examples/provision
