#!/bin/sh
# A server that needs 200 ms before it can answer (like an npx or uvx server resolving its
# package), then is the built-in calculator. $1 = the directory of the built binaries.
sleep 0.2
exec "$1/switchboard-mcp" mcp-server calculator
