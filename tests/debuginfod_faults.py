#!/usr/bin/env python3
"""tests/debuginfod_faults.py: a debuginfod server gone wrong, for tests/test_debuginfod.cpp:
every request for a debug file (GET /buildid/ID/debuginfo) gets the same wrong answer.

usage: debuginfod_faults.py ANSWER

ANSWER is one of
  file:PATH  200 with PATH's bytes (the debug file of another build, or junk)
  404        not found
  stall      reads the request and never answers
  redirect   302 to the very URL asked for, again and again

Listens on 127.0.0.1, any free port, and prints "port N" as its first line.
"""
import http.server
import sys
import threading


def main():
    answer = sys.argv[1]
    body = b""
    if answer.startswith("file:"):
        with open(answer[5:], "rb") as f:
            body = f.read()
    elif answer not in ("404", "stall", "redirect"):
        sys.exit("debuginfod_faults.py: unknown answer " + answer)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if answer == "stall":
                threading.Event().wait()
            elif answer == "redirect":
                self.send_response(302)
                self.send_header("Location", self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif answer == "404":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client that gave up (reset the connection) is what the tests do

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("port", server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
