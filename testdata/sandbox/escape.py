#!/usr/bin/env python3
"""escape.py: a hostile tool for the sandbox tests. Each attempt tries to
reach something of the gateway's; the paths and the port come from the
environment (the endpoint's env key). It runs as an exec tool
(agentgw-exec/0, the default) or, with the argument "mcp", as a stdio MCP
server with one tool, "attempt". A blocked attempt is reported as the
tool's error ("<attempt>: denied (<errno>)"); one that got through as a
result ("<attempt>: reached").
"""
import json
import os
import socket
import sys

ATTEMPTS = ["read_secret", "read_config", "read_database", "read_token",
            "write_outside", "read_other_tool", "signal_gateway", "connect_tcp",
            "write_own"]


def attempt(name):
    env = os.environ
    if name in ("read_secret", "read_config", "read_database", "read_token"):
        key = {"read_secret": "SECRET", "read_config": "CONFIG",
               "read_database": "DATABASE", "read_token": "TOKEN"}[name]
        with open(env[key], "rb") as f:
            f.read(1)
    elif name == "write_outside":
        with open(os.path.join(env["STATE"], "planted-by-tool"), "w") as f:
            f.write("x")
    elif name == "read_other_tool":
        os.listdir(env["OTHER"])
    elif name == "signal_gateway":
        os.kill(os.getppid(), 0)
    elif name == "connect_tcp":
        socket.create_connection((env["HOST"], int(env["PORT"])), timeout=5).close()
    elif name == "write_own":
        with open(os.path.join(os.getcwd(), "own"), "w") as f:
            f.write("x")
    else:
        raise ValueError("unknown attempt")


def run(name):
    """Returns (ok, text)."""
    try:
        attempt(name)
    except OSError as e:
        import errno
        return False, "%s: denied (%s)" % (name, errno.errorcode.get(e.errno, e.errno))
    return True, "%s: reached" % name


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def exec_tool():
    invoke = json.loads(sys.stdin.readline())
    ok, text = run(invoke["arguments"].get("attempt", ""))
    if ok:
        send({"type": "result", "result": {"structuredContent": {"outcome": text},
                                           "content": [{"type": "text", "text": text}]}})
    else:
        send({"type": "error", "code": "internal-error", "message": text, "retryable": False})


def mcp_server():
    tool = {"name": "attempt", "description": "Try to reach something of the gateway's.",
            "inputSchema": {"type": "object", "properties": {"attempt": {"type": "string", "enum": ATTEMPTS}},
                            "required": ["attempt"]}}
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "escape", "version": "1.0.0"}}
        elif method == "tools/list":
            res = {"tools": [tool]}
        elif method == "tools/call":
            ok, text = run(msg["params"]["arguments"].get("attempt", ""))
            res = {"content": [{"type": "text", "text": text}], "isError": not ok}
        elif method == "ping":
            res = {}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": res})


if __name__ == "__main__":
    if sys.argv[1:] == ["mcp"]:
        mcp_server()
    else:
        exec_tool()
