#!/usr/bin/env python3
"""tests/receiver.py: stands in for a Grafana Pyroscope server (POST /ingest), a Parca
server (ProfileStoreService/WriteRaw over gRPC-web) and an OTLP/HTTP profiles endpoint
(POST /v1development/profiles), records every request and judges it against the API
push/push.cpp cites, and answers as a script says.

usage: receiver.py --dir DIR [--port N] [--script STEPS] [--tls CERT,KEY [--client-ca CA]]
                   [--auth-file FILE] [--require-header 'Name: value']...

Listens on 127.0.0.1:N (0: any free port; the address is reused, so a test can kill the
receiver and start it again on the same port) and prints "port N" as its first line.
For each request it writes DIR/NNNN.json (method, path, query, headers, what it read of
the body, the answer, and "verdict": the problems found, [] when the request follows the
API), DIR/NNNN.body (the body as it came, byte for byte: tests/parca_decode.mjs decodes a
WriteRaw one with Parca's own definitions) and DIR/NNNN.pb (the profile, gunzipped: `go
tool pprof -raw DIR/NNNN.pb` reads it; for OTLP, the ExportProfilesServiceRequest, which
tests/otlp_decoded.cpp reads).
Numbering goes on from the files already in DIR.

STEPS, comma-separated, apply to successive requests; after the last, every answer is ok:
  ok        the server's success answer        500, 429, 400...  that HTTP status
  grpc:N    HTTP 200 with grpc-status N        stall:S           wait S seconds, then ok
  close     close the connection unanswered
  429:N     429 with Retry-After: N (seconds)   429:date:N  the same as an HTTP date, N s ahead
  307:same  307 to the same URL on the same host, port and scheme
  307:other 307 to the same URL with the host "localhost" (the request went to 127.0.0.1)
  partial:N OTLP's 200 whose partial_success says N profiles were rejected, and why
Each step may repeat: 500*3 is 500,500,500. "ok" alone answers ok from then on.

--tls serves HTTPS with that certificate and key; --client-ca then demands a client
certificate that CA signed (the record's "client_cert" is its subject's CN). --auth-file: a
request whose Authorization header is not exactly what FILE holds (its first line) gets
401 and no script step (a file, so that no command line shows the secret);
--require-header: one without this header gets 401 ("no org id", as Pyroscope says).

Python's standard library only.
"""
import argparse
import email.utils
import gzip
import json
import os
import re
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PYROSCOPE_PATH = "/ingest"
PARCA_PATH = "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw"
OTLP_PATH = "/v1development/profiles"


# --- protobuf wire format ---------------------------------------------------------------

def varint(data, at):
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def fields(data):
    """(number, wire type, value) of each field of a message; ValueError if malformed."""
    out = []
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, at = varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            length, at = varint(data, at)
            if at + length > len(data):
                raise ValueError("field %d runs past the end" % number)
            value, at = data[at:at + length], at + length
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError("wire type %d (groups) in field %d" % (wire, number))
        if at > len(data):
            raise ValueError("field %d runs past the end" % number)
        out.append((number, wire, value))
    return out


def varint_bytes(value):
    out = b""
    while value >= 0x80:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def varints(wire, value):
    """A repeated varint field's values: packed (bytes) or one."""
    if wire == 0:
        return [value]
    out, at = [], 0
    while at < len(value):
        v, at = varint(value, at)
        out.append(v)
    return out


# profile.proto (github.com/google/pprof/proto/profile.proto): field -> wire type.
PROFILE_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 0, 8: 0, 9: 0, 10: 0, 11: 2, 12: 0,
                  13: (0, 2), 14: 0, 15: 2}
PACKED_OK = {7, 8, 13}


def check_profile(data, problems, info):
    """Reads a pprof profile.proto message (not gzipped) at its top level, and the value
    types and samples one level down."""
    try:
        top = fields(data)
    except ValueError as e:
        problems.append("profile: not a protobuf message: %s" % e)
        return
    strings, sample_types, samples = [], [], []
    for number, wire, value in top:
        expected = PROFILE_FIELDS.get(number)
        if expected is None:
            problems.append("profile: unknown field %d" % number)
            continue
        if wire not in (expected if isinstance(expected, tuple) else (expected,)):
            problems.append("profile: field %d has wire type %d" % (number, wire))
            continue
        if number == 6:
            try:
                strings.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                problems.append("profile: a string_table entry is not UTF-8")
                strings.append("")
        elif number == 1:
            sample_types.append(value)
        elif number == 2:
            samples.append(value)
        elif number in (9, 10, 12):
            info[{9: "time_nanos", 10: "duration_nanos", 12: "period"}[number]] = value
    if not strings or strings[0] != "":
        problems.append("profile: string_table[0] is not \"\"")

    def string(i):
        if i >= len(strings):
            problems.append("profile: string index %d past the table (%d)" % (i, len(strings)))
            return "?"
        return strings[i]

    types = []
    for value in sample_types:
        vt = {n: v for n, w, v in fields(value) if w == 0}
        types.append("%s/%s" % (string(vt.get(1, 0)), string(vt.get(2, 0))))
    if not types:
        problems.append("profile: no sample_type")
    total = [0] * len(types)
    for value in samples:
        values = []
        for n, w, v in fields(value):
            if n == 2:
                values += varints(w, v)
        if len(values) != len(types):
            problems.append("profile: a sample has %d values for %d sample types" % (len(values), len(types)))
            continue
        total = [a + b for a, b in zip(total, values)]
    info["sample_types"] = types
    info["samples"] = len(samples)
    info["totals"] = total
    if "time_nanos" not in info:
        problems.append("profile: no time_nanos")


def check_pprof_bytes(raw, gzip_required, problems, info):
    """Returns the profile's protobuf bytes after checking them, or None."""
    if raw[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(raw)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            problems.append("profile: broken gzip: %s" % e)
            return None
        info["gzipped"] = True
    else:
        if gzip_required:
            problems.append("profile: not gzipped")
        data = raw
        info["gzipped"] = False
    check_profile(data, problems, info)
    return data


# --- the two APIs --------------------------------------------------------------------------

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
PYROSCOPE_PARAMS = {"name", "from", "until", "format", "sampleRate", "spyName", "units", "aggregationType"}


def judge_pyroscope(handler, query, body, problems, record):
    if handler.command != "POST":
        problems.append("method %s, not POST" % handler.command)
    for key, values in query.items():
        if key not in PYROSCOPE_PARAMS:
            problems.append("unknown query parameter %r" % key)
        if len(values) != 1:
            problems.append("query parameter %r given %d times" % (key, len(values)))
    one = {k: v[0] for k, v in query.items()}
    name = one.get("name")
    if not name:
        problems.append("no name")
    else:
        m = re.fullmatch(r"([^{}]+?)(?:\{(.*)\})?", name)
        if not m:
            problems.append("name %r is not app{key=value,...}" % name)
        else:
            labels = {}
            for pair in filter(None, (m.group(2) or "").split(",")):
                key, eq, value = pair.partition("=")
                if not eq or not LABEL_NAME.match(key) or re.search(r'[{}=,"\\]', value):
                    problems.append("name: bad label %r" % pair)
                elif key in labels:
                    problems.append("name: label %r twice" % key)
                else:
                    labels[key] = value
            record["app"] = m.group(1)
            record["labels"] = labels
    times = {}
    for key in ("from", "until"):
        value = one.get(key)
        if value is None:
            problems.append("no %s" % key)
        elif not value.isdigit() or not 1e9 <= int(value) < 1e10:
            problems.append("%s=%r is not Unix seconds" % (key, value))
        else:
            times[key] = int(value)
    if len(times) == 2 and times["from"] > times["until"]:
        problems.append("from > until")
    if one.get("format") != "pprof":
        problems.append("format=%r, not pprof" % one.get("format"))
    if "sampleRate" in one and not (one["sampleRate"].isdigit() and int(one["sampleRate"]) > 0):
        problems.append("sampleRate=%r is not a positive integer" % one["sampleRate"])
    if "spyName" in one and not one["spyName"]:
        problems.append("empty spyName")
    if one.get("units", "samples") not in ("samples", "objects", "bytes"):
        problems.append("units=%r" % one["units"])
    if one.get("aggregationType", "sum") not in ("sum", "average"):
        problems.append("aggregationType=%r" % one["aggregationType"])
    content_type = handler.headers.get("Content-Type", "")
    if not content_type:
        problems.append("no Content-Type")
    elif content_type.startswith("multipart/form-data"):
        problems.append("a multipart body with format=pprof: the server reads the body raw")
    info = {}
    data = check_pprof_bytes(body, False, problems, info)
    record["profile"] = info
    return data


def judge_parca(handler, body, problems, record):
    if handler.command != "POST":
        problems.append("method %s, not POST" % handler.command)
    content_type = handler.headers.get("Content-Type", "")
    if content_type not in ("application/grpc-web", "application/grpc-web+proto"):
        problems.append("Content-Type %r, not application/grpc-web+proto" % content_type)
    if len(body) < 5:
        problems.append("body shorter than a gRPC-web frame header")
        return None
    if body[0] != 0:
        problems.append("frame flags %d: a compressed or trailer frame" % body[0])
    length = int.from_bytes(body[1:5], "big")
    if length != len(body) - 5:
        problems.append("frame length %d, body holds %d" % (length, len(body) - 5))
    message = body[5:5 + length]
    try:
        request = fields(message)
    except ValueError as e:
        problems.append("WriteRawRequest: %s" % e)
        return None
    series_list, data = [], None
    record["normalized"] = False
    for number, wire, value in request:
        if number == 1 and wire == 2:
            problems.append("WriteRawRequest.tenant is deprecated")
        elif number == 2 and wire == 2:
            series_list.append(value)
        elif number == 3 and wire == 0:
            record["normalized"] = bool(value)
        else:
            problems.append("WriteRawRequest: unexpected field %d (wire type %d)" % (number, wire))
    if not series_list:
        problems.append("WriteRawRequest: no series")
    record["series"] = []
    for series in series_list:
        labels, samples = {}, []
        label_sets = 0
        for number, wire, value in fields(series):
            if number == 1 and wire == 2:
                label_sets += 1
                for n, w, label in fields(value):
                    if n != 1 or w != 2:
                        problems.append("LabelSet: unexpected field %d" % n)
                        continue
                    parts = {ln: lv.decode("utf-8", "replace") for ln, lw, lv in fields(label) if lw == 2}
                    name, val = parts.get(1, ""), parts.get(2, "")
                    if name in labels:
                        problems.append("label %r twice" % name)
                    elif name != "__name__" and not LABEL_NAME.match(name):
                        problems.append("invalid label name %r" % name)
                    labels[name] = val
            elif number == 2 and wire == 2:
                for n, w, raw in fields(value):
                    if n == 1 and w == 2:
                        samples.append(raw)
                    else:
                        problems.append("RawSample: unexpected field %d" % n)
            else:
                problems.append("RawProfileSeries: unexpected field %d" % number)
        if label_sets != 1:
            problems.append("RawProfileSeries: %d label sets" % label_sets)
        if not labels.get("__name__"):
            problems.append("no __name__ label (Parca: missing name label)")
        if not samples:
            problems.append("RawProfileSeries: no samples")
        profiles = []
        for raw in samples:
            info = {}
            profile = check_pprof_bytes(raw, True, problems, info)
            data = data if data is not None else profile
            profiles.append(info)
        record["series"].append({"labels": labels, "profiles": profiles})
    return data


def judge_otlp(handler, body, problems, record):
    """OTLP/HTTP: a gzipped binary ExportProfilesServiceRequest, whose top level is
    resource_profiles (1) and one dictionary (2); tests/otlp_decoded.cpp reads the rest."""
    if handler.command != "POST":
        problems.append("method %s, not POST" % handler.command)
    if handler.headers.get("Content-Type", "") != "application/x-protobuf":
        problems.append("Content-Type %r, not application/x-protobuf" % handler.headers.get("Content-Type"))
    if handler.headers.get("Content-Encoding", "") != "gzip":
        problems.append("Content-Encoding %r, not gzip" % handler.headers.get("Content-Encoding"))
        data = body
    else:
        try:
            data = gzip.decompress(body)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            problems.append("broken gzip: %s" % e)
            return None
    resources = dictionaries = 0
    for number, wire, value in fields(data):
        if number == 1 and wire == 2:
            resources += 1
        elif number == 2 and wire == 2:
            dictionaries += 1
        else:
            problems.append("ExportProfilesServiceRequest: unexpected field %d (wire type %d)" % (number, wire))
    if dictionaries != 1:
        problems.append("ExportProfilesServiceRequest: %d dictionaries" % dictionaries)
    record["resource_profiles"] = resources
    return data


# --- the server ----------------------------------------------------------------------------

class Script:
    def __init__(self, text):
        self.steps = []
        self.forever_ok = False
        self.lock = threading.Lock()
        for step in filter(None, (s.strip() for s in (text or "").split(","))):
            what, star, count = step.partition("*")
            n = int(count) if star else 1
            if what == "ok" and not star:
                self.steps.append("ok-forever")
                continue
            if not (what in ("ok", "close", "307:same", "307:other") or what.isdigit()
                    or re.fullmatch(r"grpc:\d+", what) or re.fullmatch(r"stall:[0-9.]+", what)
                    or re.fullmatch(r"429:(date:)?\d+", what) or re.fullmatch(r"partial:\d+", what)):
                raise SystemExit("receiver: bad script step %r" % step)
            self.steps += [what] * n

    def next(self):
        with self.lock:
            if self.forever_ok or not self.steps:
                return "ok"
            step = self.steps.pop(0)
            if step == "ok-forever":
                self.forever_ok = True
                return "ok"
            return step


class Receiver(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, port, directory, script, tls=None, auth=None, required=()):
        super().__init__(("127.0.0.1", port), Handler)
        self.directory = directory
        self.script = script
        self.tls = tls
        self.auth = auth
        self.required = required
        self.lock = threading.Lock()
        numbers = [int(f[:4]) for f in os.listdir(directory) if re.fullmatch(r"\d{4}\.json", f)]
        self.count = max(numbers, default=0)

    def get_request(self):
        sock, address = self.socket.accept()
        if self.tls:
            # The handshake happens in the request's thread (Handler.setup), not here.
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def next_number(self):
        with self.lock:
            self.count += 1
            return self.count


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the servers do

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.client_cert = None
        if self.server.tls:
            try:
                self.connection.do_handshake()
            except (ssl.SSLError, OSError) as e:
                # A client that refused our certificate, or had none: no request.
                self.handshake_error = str(e)
                self.close_connection = True
                return
            cert = self.connection.getpeercert()
            if cert:
                self.client_cert = dict(x[0] for x in cert.get("subject", ())).get("commonName")

    def handle(self):
        if getattr(self, "handshake_error", None):
            return
        super().handle()

    def do_POST(self):
        self.handle_request()

    def do_GET(self):
        self.handle_request()

    def do_PUT(self):
        self.handle_request()

    def handle_request(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        problems = []
        record = {"method": self.command, "path": url.path, "query": query,
                  "headers": {k: v for k, v in self.headers.items()}}
        length = self.headers.get("Content-Length")
        if length is None:
            problems.append("no Content-Length")
            body = b""
        else:
            body = self.rfile.read(int(length))
        record["body_bytes"] = len(body)
        if not self.headers.get("User-Agent", "").startswith("profile/"):
            problems.append("User-Agent %r" % self.headers.get("User-Agent"))
        parca = url.path.endswith(PARCA_PATH)
        data = None
        try:
            if url.path.endswith(PYROSCOPE_PATH):
                record["api"] = "pyroscope"
                data = judge_pyroscope(self, query, body, problems, record)
            elif parca:
                record["api"] = "parca"
                data = judge_parca(self, body, problems, record)
            elif url.path.endswith(OTLP_PATH):
                record["api"] = "otlp"
                data = judge_otlp(self, body, problems, record)
            else:
                problems.append("path %r is none of %s, %s and %s" % (url.path, PYROSCOPE_PATH, PARCA_PATH, OTLP_PATH))
        except ValueError as e:
            problems.append("malformed: %s" % e)
        record["client_cert"] = self.client_cert
        record["tls"] = bool(self.server.tls)
        refusal = None
        if self.server.auth is not None and self.headers.get("Authorization") != self.server.auth:
            refusal = "401"
        for header in self.server.required:
            name, _, value = header.partition(":")
            if self.headers.get(name.strip()) != value.strip():
                refusal = "401"
        step = refusal or self.server.script.next()
        record["answer"] = step
        record["verdict"] = problems
        number = self.server.next_number()
        base = os.path.join(self.server.directory, "%04d" % number)
        with open(base + ".body", "wb") as f:
            f.write(body)
        if data is not None:
            with open(base + ".pb", "wb") as f:
                f.write(data)
        with open(base + ".json.tmp", "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")
        os.rename(base + ".json.tmp", base + ".json")
        self.answer(step, parca, url.path.endswith(OTLP_PATH))

    def answer(self, step, parca, otlp=False):
        if step == "close":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if step.startswith("stall:"):
            time.sleep(float(step[6:]))
            step = "ok"
        if step == "ok" and parca:
            # WriteRawResponse is empty: one empty message frame, then the trailer frame.
            trailer = b"grpc-status:0\r\ngrpc-message:\r\n"
            self.reply(200, "application/grpc-web+proto",
                       b"\x00\x00\x00\x00\x00" + b"\x80" + len(trailer).to_bytes(4, "big") + trailer)
        elif step == "ok" and otlp:
            # An ExportProfilesServiceResponse with no partial_success: every profile taken.
            self.reply(200, "application/x-protobuf", b"")
        elif step == "ok":
            self.reply(200, "text/plain", b"")
        elif step.startswith("partial:"):
            # partial_success (1) { rejected_profiles (1): N; error_message (2) }
            message = b"scripted rejection"
            partial = b"\x08" + varint_bytes(int(step[8:])) + b"\x12" + varint_bytes(len(message)) + message
            self.reply(200, "application/x-protobuf", b"\x0a" + varint_bytes(len(partial)) + partial)
        elif step.startswith("429:"):
            wait = int(step.rsplit(":", 1)[1])
            retry_after = (email.utils.formatdate(time.time() + wait, usegmt=True)
                           if step.startswith("429:date:") else str(wait))
            self.reply(429, "text/plain", b"slow down\n", {"Retry-After": retry_after})
        elif step.startswith("307:"):
            host = "localhost" if step == "307:other" else self.headers.get("Host", "").rsplit(":", 1)[0]
            where = "%s://%s:%d%s" % ("https" if self.server.tls else "http", host,
                                      self.server.server_address[1], self.path)
            self.reply(307, "text/plain", b"moved\n", {"Location": where})
        elif step.startswith("grpc:"):
            self.reply(200, "application/grpc-web+proto", b"",
                       {"grpc-status": step[5:], "grpc-message": "scripted failure"})
        else:
            status = int(step)
            self.reply(status, "text/plain", b"scripted %d\nsecond line\n" % status)

    def reply(self, status, content_type, body, headers=None):
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", default="")
    parser.add_argument("--tls", default="")
    parser.add_argument("--client-ca", default="")
    parser.add_argument("--auth-file", default="")
    parser.add_argument("--require-header", action="append", default=[])
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    tls = None
    if args.tls:
        cert, key = args.tls.split(",")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        if args.client_ca:
            tls.verify_mode = ssl.CERT_REQUIRED
            tls.load_verify_locations(args.client_ca)
    auth = None
    if args.auth_file:
        with open(args.auth_file) as f:
            auth = f.readline().rstrip("\r\n")
    server = Receiver(args.port, args.dir, Script(args.script), tls, auth, args.require_header)
    print("port %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
