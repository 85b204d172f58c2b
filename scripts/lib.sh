# Shared by scripts/demo and scripts/test: install Debian packages that are
# missing, as root or through sudo.
install_packages() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "installing: ${missing[*]}" >&2
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q -o DPkg::Lock::Timeout=600 "${missing[@]}"
}

require_go() {
	if ! command -v go >/dev/null; then
		echo "agentgw needs Go 1.26 or newer on PATH (https://go.dev/doc/install)" >&2
		exit 1
	fi
}

# The MCP reference server that the MCP tests run (docs/mcp.md), at the
# version they were written against. It is installed from npm once into
# demo/mcp-everything (ignored by git), or into $1; the path of its
# dist/index.js is printed, for AGENTGW_MCP_EVERYTHING. npm's own output goes
# to stderr.
MCP_EVERYTHING_VERSION=2026.8.31
install_mcp_everything() {
	local prefix="${1:-demo/mcp-everything}"
	local pkg="$prefix/node_modules/@modelcontextprotocol/server-everything"
	if ! grep -qs "\"version\": \"$MCP_EVERYTHING_VERSION\"" "$pkg/package.json" || [ ! -f "$pkg/dist/index.js" ]; then
		command -v npm >/dev/null || install_packages nodejs npm >&2
		echo "installing @modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION" >&2
	fi
	echo "$(cd "$pkg/dist" && pwd)/index.js"
}

# The MCP inspector CLI that the `agentgw mcp` tests drive (docs/mcp-server.md),
# pinned like server-everything, installed once into demo/mcp-inspector (or
# $1). It declares Node >= 22.19 but its CLI runs on Node 20; with an older
# system Node (Debian 12 has 18), Node 22 is installed from npm beside it.
# The path of a wrapper that runs it with that Node is printed, for
# AGENTGW_MCP_INSPECTOR.
MCP_INSPECTOR_VERSION=2.12.0
install_mcp_inspector() {
	local prefix="${1:-demo/mcp-inspector}"
	local pkg="$prefix/node_modules/@modelcontextprotocol/inspector"
	if ! grep -qs "\"version\": \"$MCP_INSPECTOR_VERSION\"" "$pkg/package.json" || [ ! -x "$prefix/node_modules/.bin/mcp-inspector" ]; then
		command -v npm >/dev/null || install_packages nodejs npm >&2
		echo "installing @modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION" >&2
	fi
	local major
	major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
	if [ "$major" -lt 20 ] && [ ! -x "$prefix/node_modules/.bin/node" ]; then
		echo "node $major is too old for the inspector: installing node@22 into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error node@22 >&2
	fi
	local dir
	dir="$(cd "$prefix" && pwd)"
	cat >"$dir/mcp-inspector" <<WRAPPER
#!/bin/sh
# Written by scripts/lib.sh (install_mcp_inspector).
PATH="$dir/node_modules/.bin:\$PATH" exec "$dir/node_modules/.bin/mcp-inspector" "\$@"
WRAPPER
	chmod +x "$dir/mcp-inspector"
	echo "$dir/mcp-inspector"
}

# The official TypeScript MCP SDK (docs/mcp-server.md), pinned: its client
# at 2025-11-25, with its experimental Tasks, is the one most MCP clients
# are built on. Into demo/mcp-tssdk (or $1); prints that directory, for
# AGENTGW_MCP_TSSDK (integration/testdata/tsclient.mjs imports it).
MCP_TSSDK_VERSION=1.32.2
install_mcp_tssdk() {
	local prefix="${1:-demo/mcp-tssdk}"
	if ! grep -qs "\"version\": \"$MCP_TSSDK_VERSION\"" "$prefix/node_modules/@modelcontextprotocol/sdk/package.json"; then
		command -v npm >/dev/null || install_packages nodejs npm >&2
		echo "installing @modelcontextprotocol/sdk@$MCP_TSSDK_VERSION into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@modelcontextprotocol/sdk@$MCP_TSSDK_VERSION" >&2
	fi
	(cd "$prefix" && pwd)
}

# The official MCP conformance suite (docs/mcp.md), pinned: 0.2.0-alpha.12 is
# the first release with the 2026-07-28 and tasks-extension scenarios (npm's
# latest tag is older). It needs Node 22 (fs.globSync), so npm's node@22 is
# always installed beside it. Into demo/mcp-conformance (or $1) go the suite,
# that Node, a wrapper `mcp-conformance` that runs the suite with it, and
# go-sdk's own fixture server, built from the module cache at the version
# go.mod pins (`everything-server -http ADDR`). The wrapper's path is printed,
# for AGENTGW_MCP_CONFORMANCE; the server is beside it.
MCP_CONFORMANCE_VERSION=0.2.0-alpha.12
install_mcp_conformance() {
	local prefix="${1:-demo/mcp-conformance}"
	local pkg="$prefix/node_modules/@modelcontextprotocol/conformance"
	if ! grep -qs "\"version\": \"$MCP_CONFORMANCE_VERSION\"" "$pkg/package.json" || [ ! -x "$prefix/node_modules/.bin/node" ]; then
		command -v npm >/dev/null || install_packages nodejs npm >&2
		echo "installing @modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION and node@22 into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
			"@modelcontextprotocol/conformance@$MCP_CONFORMANCE_VERSION" node@22 >&2
	fi
	local dir bin
	dir="$(cd "$prefix" && pwd)"
	bin="$(cd "$pkg" && node -p 'const b = require("./package.json").bin; typeof b === "string" ? b : Object.values(b)[0]')"
	cat >"$dir/mcp-conformance" <<WRAPPER
#!/bin/sh
# Written by scripts/lib.sh (install_mcp_conformance).
PATH="$dir/node_modules/.bin:\$PATH" exec "$dir/node_modules/.bin/node" "$dir/node_modules/@modelcontextprotocol/conformance/$bin" "\$@"
WRAPPER
	chmod +x "$dir/mcp-conformance"
	# go-sdk's conformance fixture, at the go-sdk version of go.mod; run from
	# the repository so that the module's go.sum vouches for it.
	require_go
	CGO_ENABLED=0 go build -o "$dir/everything-server" \
		github.com/modelcontextprotocol/go-sdk/conformance/everything-server >&2
	echo "$dir/mcp-conformance"
}
