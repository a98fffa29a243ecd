#!/usr/bin/env python3
"""pg_ratelimit_gate's integration tests: real processes on loopback (run by test/gate/gate_test.sh, which
starts PostgreSQL and sets the GATE_* environment). Python's standard library only; HTTP clients are curl,
wrk and raw sockets.

Checks, in order:
  config      bad configuration files: each refused at start (and by --check-config) naming file:line and the
              problem; a database that refuses the definitions stops the gate; the limits defined at start
  headers     429: Retry-After, RateLimit-Policy and RateLimit exactly as the client library formats them, the
              JSON body; allowed answers carry the fields too
  exact       per-user exactness under concurrency through two gates sharing one file (wrk on both): admitted
              = allowance, for a memory and a durable limit, whatever the split
  aon         all or nothing across global + per-user: a request denied by one limit consumes nothing anywhere
  fields      every request-field kind (header, cookie, query, path, method, host, client ip, JWT claims
              HS256 / RS256 / ES256) and on_missing; a forged, an expired, an alg none JWT yield no claims
  monitor     monitoring: always forwarded; X-RateLimit-Would-Deny to backend and client only when denied
  throttle    a request delayed by about retry_after then answered 200; a disconnect during the delay gives
              the reservation back at once and never reaches the backend
  map         the map endpoint: its limits applied, its answers cached, its failure (failure_mode closed: 503)
  bodies      large and chunked bodies forwarded intact both ways; HEAD; keep-alive
  backend     a backend that is down: 502
  slow        slow clients (unfinished headers, a reader that never reads) do not block others
  metrics     /metrics counts and /healthz
  restart     a database restart under load: failure_mode open bypasses (RateLimit-Bypassed:
              database-unavailable), closed answers 503, then both decide again by themselves
  reconfigure a changed file and a restarted gate redefine the limit live (proportional rescale)
"""
import base64
import hashlib
import hmac
import json
import math
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

BIN = os.environ["GATE_BIN"]
WORK = os.environ["GATE_WORK"]
PG_BIN = os.environ["GATE_PG_BIN"]
PG_DATA = os.environ["GATE_PG_DATA"]
PG_LOG = os.environ["GATE_PG_LOG"]
PG_OPTIONS = os.environ["GATE_PG_OPTIONS"]
RUN_AS = shlex.split(os.environ.get("GATE_RUN_AS", ""))
HERE = os.path.dirname(os.path.abspath(__file__))
CONNINFO = f"host={os.environ['PGHOST']} port={os.environ.get('PGPORT', '5432')} user=postgres dbname=postgres"
SECRET = "gate-test-secret-0123456789abcdef-0123456789"

CASES = 0
FAILURES = []
PROCESSES = []


def check(name, condition, detail=""):
    global CASES
    CASES += 1
    if condition:
        print(f"ok: {name}", flush=True)
    else:
        FAILURES.append(name)
        print(f"FAILED: {name}" + (f" -- {detail}" if detail else ""), flush=True)
    return condition


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The port of the backend that is down: bound for the whole run and never listening, so that connections
# to it are refused and no gate or backend started later can be given it (a port merely found free once
# was, and the "backend down" request then reached a gate: 404 instead of 502).
DEAD_BACKEND = socket.socket()
DEAD_BACKEND.bind(("127.0.0.1", 0))


def psql(sql):
    out = subprocess.run(["psql", "-X", "-At", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def units_left(key, limit):
    """Whole units the key holds now (rate_limit_check answers for one more unit)."""
    return int(psql(f"SELECT d.remaining + d.allowed::int FROM rate_limit_check('{key}', '{limit}') AS d"))


# --- HTTP through curl ----------------------------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body, seconds):
        self.status, self.headers, self.body, self.seconds = status, headers, body, seconds

    def header(self, name):
        values = self.headers.get(name.lower())
        return values[-1] if values else None

    def json(self):
        return json.loads(self.body)


def curl(url, *extra, timeout=20):
    """One request through curl; the last header block (after any 100 Continue) is the answer's."""
    head, body = os.path.join(WORK, "curl.head"), os.path.join(WORK, "curl.body")
    cmd = ["curl", "-sS", "-o", body, "-D", head, "-w", "%{http_code} %{time_total}", "--max-time", str(timeout),
           *extra, url]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return Response(0, {}, b"", 0.0)
    status, seconds = out.stdout.split()
    blocks = [b for b in open(head, "rb").read().decode("latin-1").split("\r\n\r\n") if b.strip()]
    headers = {}
    for line in blocks[-1].split("\r\n")[1:] if blocks else []:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    return Response(int(status), headers, open(body, "rb").read(), float(seconds))


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


# --- processes ------------------------------------------------------------------------------------------

def start(cmd, log_name, env=None):
    log = open(os.path.join(WORK, log_name), "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    PROCESSES.append(proc)
    return proc


class Gate:
    def __init__(self, config, name, env=None):
        self.port, self.admin = free_port(), free_port()
        self.env = env
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_url = f"http://127.0.0.1:{self.admin}"
        self.name, self.config = name, config
        self.log = os.path.join(WORK, name + ".log")
        self.proc = None

    def start(self):
        self.proc = start([BIN, "--config", self.config, "--listen", f"127.0.0.1:{self.port}",
                           "--admin-listen", f"127.0.0.1:{self.admin}"], self.name + ".log", self.env)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gate {self.name} exited: " + open(self.log).read()[-2000:])
            try:
                urllib.request.urlopen(self.admin_url + "/healthz", timeout=1).read()
                return self
            except Exception:
                time.sleep(0.1)
        raise RuntimeError(f"gate {self.name} did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def health(self):
        try:
            with urllib.request.urlopen(self.admin_url + "/healthz", timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def metrics(self):
        with urllib.request.urlopen(self.admin_url + "/metrics", timeout=5) as r:
            return r.read().decode()

    def access_lines(self, pattern):
        return [line for line in open(self.log, errors="replace") if pattern in line]


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


# --- JWTs -----------------------------------------------------------------------------------------------

def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_hs256(payload, secret=SECRET, alg="HS256"):
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode()) + "." + b64(json.dumps(payload).encode())
    return head + "." + b64(hmac.new(secret.encode(), head.encode(), hashlib.sha256).digest())


def der_to_raw(der):
    """An ECDSA-Sig-Value (DER SEQUENCE of two INTEGERs) as JWS's R || S."""
    assert der[0] == 0x30
    at = 2 if der[1] < 0x80 else 3
    parts = []
    for _ in range(2):
        assert der[at] == 0x02
        length = der[at + 1]
        parts.append(int.from_bytes(der[at + 2:at + 2 + length], "big").to_bytes(32, "big"))
        at += 2 + length
    return parts[0] + parts[1]


def jwt_openssl(payload, key_file, alg):
    head = b64(json.dumps({"alg": alg}).encode()) + "." + b64(json.dumps(payload).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file], input=head.encode(),
                         capture_output=True, check=True).stdout
    return head + "." + b64(der_to_raw(sig) if alg == "ES256" else sig)


def make_keys():
    keys = {}
    for name, args in (("rsa", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                       ("ec", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])):
        private = os.path.join(WORK, name + ".pem")
        subprocess.run(["openssl", "genpkey", *args, "-out", private], check=True, capture_output=True)
        public = subprocess.run(["openssl", "pkey", "-in", private, "-pubout"], check=True,
                                capture_output=True, text=True).stdout
        keys[name] = (private, public)
    return keys


# --- configuration files --------------------------------------------------------------------------------

def indent(text, spaces):
    return "\n".join(" " * spaces + line for line in text.strip().splitlines())


def main_config(backend, keys, extra_limit=""):
    limits = f"""
      - key: global
        burst: 50
        window: 1h
      - key: user
        burst: 30
        window: 1h
        request_field: $.request.http.cookies['username']
      - key: exact_memory
        burst: 200
        window: 1h
        request_field: $.request.http.cookies['username']
        storage: memory
      - key: exact_durable
        burst: 200
        window: 1h
        request_field: $.request.http.cookies['username']
      - key: f_header
        burst: 2
        window: 1h
        request_field: $.request.http.headers['X-User-Id'][0]
      - key: f_cookie
        burst: 2
        window: 1h
        request_field: $.request.http.cookies['session']
        storage: unlogged
      - key: f_query
        burst: 2
        window: 1h
        request_field: $.request.http.query['api_key']
        algorithm: token_bucket
      - key: f_path
        burst: 2
        window: 1h
        request_field: $.request.http.path
        algorithm: fixed_window
      - key: f_method
        burst: 2
        window: 1h
        request_field: $.request.http.method
        algorithm: sliding_window
      - key: f_host
        burst: 2
        window: 1h
        request_field: $.request.http.host
      - key: f_ip
        burst: 2
        window: 1h
        request_field: $.request.client.ip
        storage: memory
      - key: f_jwt
        burst: 2
        window: 1h
        request_field: $.request.parsed_token.payload.sub
        on_missing: key:anonymous
      - key: f_reject
        burst: 100
        window: 1h
        request_field: $.request.http.headers['X-Api-Key'][0]
        on_missing: reject
      - key: monitor
        burst: 2
        window: 1h
      - key: throttle
        burst: 2
        window: 2s
        max_throttle: 3s
      - key: hello
        burst: 1000000
        window: 1s
        storage: memory
{extra_limit}"""
    routes = [("/aon/*", "[global, user]", ""), ("/exact/memory", "[exact_memory]", ""),
              ("/exact/durable", "[exact_durable]", "")]
    routes += [(f"/f/{kind}*", f"[f_{kind}]", "") for kind in
               ("header", "cookie", "query", "path", "method", "host", "ip", "jwt", "reject")]
    routes += [("/monitor", "[monitor]", "        monitoring: true\n"), ("/throttle", "[throttle]", ""),
               ("/hello", "[hello]", ""), ("/upload", "[hello]", ""), ("/big", "[hello]", ""),
               ("/chunked", "[hello]", "")]
    urls = ""
    for pattern, limits_of, extra in routes:
        urls += f"""  - pattern: '{pattern}'
    target: http://127.0.0.1:{backend}
    plugins:
      ratelimit:
        enabled: true
        limits: {limits_of}
{extra}"""
    urls += f"""  - pattern: '/down'
    target: http://127.0.0.1:{DEAD_BACKEND.getsockname()[1]}
    plugins:
      ratelimit:
        enabled: true
        limits: [hello]
  - pattern: '*'
    target: http://127.0.0.1:{backend}
"""
    return f"""gate:
  listen: 127.0.0.1:1
  admin_listen: 127.0.0.1:2
  client_timeout: 30s
  plugins:
  - id: ratelimit
    type: ratelimit
    enabled: false
    parameters:
      limiter:
        type: pg_ratelimit
        conninfo: "{CONNINFO}"
        pool_size: 4
        schema: public
        failure_mode: open
        # Longer than the default 1 s: the test cluster commits synchronously, and on a loaded machine a WAL
        # flush can stall a hot key's writers past a second (failure_mode open would then let requests
        # through unlimited, which the exactness checks would count).
        timeout: 10s
      jwt:
        hs256_secret: {SECRET}
        public_keys:
        - |
{indent(keys['rsa'][1], 10)}
        - |
{indent(keys['ec'][1], 10)}
      limits:{limits}
  urls:
{urls}"""


def map_config(backend):
    return f"""gate:
  plugins:
  - id: ratelimit
    type: ratelimit
    parameters:
      limiter:
        type: pg_ratelimit
        conninfo: "{CONNINFO}"
        pool_size: 2
        failure_mode: closed
      map_endpoint: http://127.0.0.1:{backend}/limits
      map_cache_ttl: 30s
      map_identity_headers: [x-user]
      limits:
      - key: closed_hello
        burst: 1000000
        window: 1s
        storage: memory
  urls:
  - pattern: '/mapped/*'
    target: http://127.0.0.1:{backend}
    plugins:
      ratelimit:
        enabled: true
        limits: []
  - pattern: '/closed'
    target: http://127.0.0.1:{backend}
    plugins:
      ratelimit:
        enabled: true
        limits: [closed_hello]
"""


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# --- the checks -----------------------------------------------------------------------------------------

def test_config(backend, keys):
    good = main_config(backend, keys)
    # (name, bad text, the error's line relative to the first line that differs, what the error says)
    cases = [
        ("an unknown key", good.replace("  client_timeout: 30s\n", "  client_timeout: 30s\n  clinet_timeout: 1s\n"),
         0, 'unknown key "clinet_timeout" in gate'),
        ("a duration without unit", good.replace("        window: 2s\n", "        window: 2\n"), 0,
         'window: "2" is not a duration: it has no unit'),
        ("a bad request field", good.replace("$.request.http.query['api_key']", "$.request.http.body.api_key"), 0,
         'unsupported request field "$.request.http.body.api_key"'),
        ("a limiter that is not pg_ratelimit", good.replace("type: pg_ratelimit", "type: redis_lua"), 0,
         'limiter type "redis_lua" is not supported'),
        ("an unknown storage", good.replace("storage: unlogged", "storage: disk"), 0,
         'storage must be durable, unlogged or memory, not "disk"'),
        ("a URL naming an unknown limit", good.replace("limits: [monitor]", "limits: [monitr]"), 0,
         'no limit has key "monitr"'),
        ("a bad throttle", good.replace("max_throttle: 3s", "max_throttle: soon"), 0,
         'max_throttle: "soon" is not a duration'),
        # A block scalar's line is that of its '|', the line before its text.
        ("a bad public key", good.replace("-----BEGIN PUBLIC KEY-----", "-----BEGIN PUBLIK KEY-----", 1), -1,
         "public key: not a PEM public key"),
        ("a conninfo libpq cannot parse (a bare word)", good.replace(CONNINFO, "appdb"), 0,
         'conninfo: missing "=" after "appdb"'),
        ("a YAML syntax error", good.replace("    type: ratelimit\n", "    type: [ratelimit\n"), None,
         "YAML syntax error"),
    ]
    for name, text, offset, needle in cases:
        path = write("bad.yaml", text)
        first = next(n for n, (a, b) in enumerate(zip(good.splitlines(), text.splitlines()), 1) if a != b)
        line = str(first + offset) if offset is not None else r"\d+"
        for args in (["--check-config"], []):
            out = subprocess.run([BIN, "--config", path, *args], capture_output=True, text=True, timeout=20)
            prefix = f"pg_ratelimit_gate: configuration error: {re.escape(path)}:{line}: "
            check(f"config: {name} is refused {'by --check-config' if args else 'at start'} (exit 2, "
                  f"{os.path.basename(path)}:{line.replace(chr(92) + 'd+', 'N')})",
                  out.returncode == 2 and re.match(prefix, out.stderr) is not None and needle in out.stderr,
                  f"exit {out.returncode}, stderr {out.stderr!r}")
    out = subprocess.run([BIN, "--config", write("good.yaml", good), "--check-config"], capture_output=True, text=True)
    check("config: --check-config accepts the test file", out.returncode == 0 and "configuration OK" in out.stdout,
          out.stdout + out.stderr)
    out = subprocess.run([BIN, "--config", "/nonexistent.yaml"], capture_output=True, text=True)
    check("config: a missing file is refused", out.returncode == 2 and "/nonexistent.yaml: cannot read the file"
          in out.stderr, out.stderr)
    # The database refuses the definitions: no extension in that schema.
    psql("CREATE SCHEMA IF NOT EXISTS empty_schema")
    out = subprocess.run([BIN, "--config", write("noext.yaml", good.replace("schema: public", "schema: empty_schema"))],
                         capture_output=True, text=True, timeout=20)
    check("config: a schema without the extension stops the gate (exit 1, the server's error)",
          out.returncode == 1 and "cannot define limit gate_global" in out.stderr
          and "does not exist" in out.stderr, out.stderr)
    # A LATIN1 database cannot keep every UTF-8 key as sent (22P05 in a batch, PL/Proxy hashing other bytes).
    psql("DROP DATABASE IF EXISTS gate_latin1")
    psql("CREATE DATABASE gate_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    out = subprocess.run([BIN, "--config", write("latin1.yaml", good.replace(CONNINFO, CONNINFO.replace(
        "dbname=postgres", "dbname=gate_latin1")))], capture_output=True, text=True, timeout=20)
    psql("DROP DATABASE gate_latin1")
    check("config: a LATIN1 database stops the gate (exit 1: it needs UTF8 or SQL_ASCII)",
          out.returncode == 1 and "the database's encoding is LATIN1" in out.stderr, out.stderr)


def test_defined(gate):
    rows = psql("SELECT name, algorithm, rate, extract(epoch FROM period), capacity, max_reserved, storage "
                "FROM rate_limit_config WHERE name LIKE 'gate\\_%' ORDER BY name")
    rows = {r.split("|")[0]: r.split("|")[1:] for r in rows.splitlines()}
    check("start: every limit of the file is defined as gate_<key>", len(rows) == 17 and "gate_f_jwt" in rows,
          str(sorted(rows)))
    check("start: a memory limit's numbers (burst per window, capacity burst, gcra)",
          rows.get("gate_exact_memory") == ["gcra", "200", "3600.000000", "200", "0", "memory"],
          str(rows.get("gate_exact_memory")))
    check("start: max_reserved from max_throttle (burst 2 per 2s, 3s: 3 units)",
          rows.get("gate_throttle") == ["gcra", "2", "2.000000", "2", "3", "durable"], str(rows.get("gate_throttle")))
    check("start: storage and algorithm as written",
          rows.get("gate_f_cookie", [None])[-1] == "unlogged" and rows.get("gate_f_query", [None])[0] == "token_bucket"
          and rows.get("gate_f_method", [None])[0] == "sliding_window", str(rows))


def test_headers(gate):
    statuses = []
    for _ in range(31):
        r = curl(gate.url + "/aon/x", "-b", "username=hdr")
        statuses.append(r.status)
    ok = curl(gate.url + "/aon/x", "-b", "username=hdr2")
    check("headers: an allowed answer carries RateLimit-Policy and RateLimit (one item per limit)",
          ok.status == 200 and ok.header("ratelimit-policy") == '"global";q=50;w=3600, "user";q=30;w=3600'
          and re.fullmatch(r'"global";r=\d+;t=\d+, "user";r=29;t=120', ok.header("ratelimit") or ""),
          f"{ok.status} {ok.headers}")
    check("headers: 30 of 31 allowed for one user", statuses.count(200) == 30 and statuses[-1] == 429, str(statuses))
    check("headers: 429 Too Many Requests", r.status == 429)
    # 30 units of a 30-per-hour limit used over the last few seconds: the next is due in 120 s less the time
    # the requests took (the first one's unit is back first).
    body = r.json() if r.status == 429 else {}
    exact = body.get("retry_after", 0)
    check("headers: the JSON body names the error, the limit and retry_after",
          body.get("error") == "rate_limited" and body.get("limit") == "user" and 100 < exact <= 120
          and r.header("content-type") == "application/json", str(body))
    check(f"headers: Retry-After is retry_after in whole seconds, rounded up ({r.header('retry-after')}, {exact})",
          r.header("retry-after") == str(math.ceil(exact)), str(r.header("retry-after")))
    check("headers: 429's RateLimit-Policy", r.header("ratelimit-policy") == '"global";q=50;w=3600, "user";q=30;w=3600',
          str(r.header("ratelimit-policy")))
    reset = re.fullmatch(r'"global";r=\d+;t=\d+, "user";r=0;t=(\d+)', r.header("ratelimit") or "")
    check("headers: 429's RateLimit (the denial's remaining 0, reset within the hour)",
          reset is not None and 3580 <= int(reset.group(1)) <= 3600, str(r.header("ratelimit")))
    check("headers: Via on the way back", ok.header("via") == "1.1 pg_ratelimit_gate", str(ok.header("via")))
    seen = ok.json()["headers"]
    check("headers: the backend got X-Forwarded-For/-Proto/-Host and Via, no hop-by-hop field",
          seen.get("x-forwarded-for") == "127.0.0.1" and seen.get("x-forwarded-proto") == "http"
          and seen.get("via") == "1.1 pg_ratelimit_gate" and "connection" not in seen, str(seen))


def wrk(url, cookie, seconds, connections):
    return subprocess.Popen(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-H", f"Cookie: username={cookie}",
                             url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_exact(gate1, gate2, backend):
    for storage in ("memory", "durable"):
        user = "exact-" + storage
        path = f"/exact/{storage}"
        before1 = len(gate1.access_lines(f'"GET {path} HTTP/1.1" 200'))
        before2 = len(gate2.access_lines(f'"GET {path} HTTP/1.1" 200'))
        runs = [wrk(gate1.url + path, user, 3, 8), wrk(gate2.url + path, user, 3, 8)]
        outputs = [p.communicate()[0] for p in runs]
        requests = sum(int(re.search(r"(\d+) requests in", o).group(1)) for o in outputs if "requests in" in o)
        stats = get_json(f"http://127.0.0.1:{backend}/_stats")
        admitted = sum(1 for e in stats["requests"] if e["path"] == path and
                       e["headers"].get("cookie") == f"username={user}")
        split = (len(gate1.access_lines(f'"GET {path} HTTP/1.1" 200')) - before1,
                 len(gate2.access_lines(f'"GET {path} HTTP/1.1" 200')) - before2)
        print(f"   {storage}: {requests} requests through two gates, admitted {admitted} (gate 1: {split[0]}, "
              f"gate 2: {split[1]})")
        check(f"exact: two gates, one {storage} per-user limit of 200: the backend saw exactly 200 of "
              f"{requests} requests", admitted == 200 and requests > 400, f"admitted {admitted} of {requests}")
        check(f"exact: the gates' access logs agree ({split[0]} + {split[1]} = 200, both gates admitted some)",
              sum(split) == 200 and min(split) > 0, str(split))
        check(f"exact: the database key is empty ({storage})", units_left(user, f"gate_exact_{storage}") == 0)
        bypassed = [l for g in (gate1, gate2) for l in g.access_lines(f'"GET {path} HTTP/1.1"') if "bypassed" in l]
        check(f"exact: no request was let through unlimited ({storage})", not bypassed, bypassed[:3])


def test_all_or_nothing(gate):
    # global: 50 per hour, user: 30 per hour. Start from full keys (the headers check used global).
    psql("SELECT rate_limit_reset(k, l) FROM (VALUES ('global', 'gate_global'), ('alice', 'gate_user'),"
         " ('bob', 'gate_user'), ('carol', 'gate_user')) AS t(k, l)")
    statuses = [curl(gate.url + "/aon/y", "-b", "username=alice").status for _ in range(35)]
    check("all-or-nothing: alice's own limit admits 30 of her 35 ...", statuses.count(200) == 30, str(statuses))
    check("all-or-nothing: ... and its 5 denials took nothing from global (20 of 50 left)",
          units_left("global", "gate_global") == 20, str(units_left("global", "gate_global")))
    statuses = [curl(gate.url + "/aon/y", "-b", "username=bob").status for _ in range(25)]
    check("all-or-nothing: global runs out: bob gets exactly the 20 global had left",
          statuses.count(200) == 20 and statuses[-5:] == [429] * 5, str(statuses))
    check("all-or-nothing: global's 5 denials took nothing from bob's own limit (10 of 30 left)",
          units_left("bob", "gate_user") == 10, str(units_left("bob", "gate_user")))
    r = curl(gate.url + "/aon/y", "-b", "username=carol")
    check("all-or-nothing: a new user denied by global keeps a full limit of her own",
          r.status == 429 and r.json().get("limit") == "global" and units_left("carol", "gate_user") == 30,
          f"{r.status} {r.body[:200]}")


def test_fields(gate, keys):
    now = int(time.time())
    cases = [
        ("header", "/f/header", ["-H", "X-User-Id: alice"], ["-H", "X-User-Id: bob"], "alice"),
        # Not ASCII, through a gate whose environment asks for LATIN1: the key SQL callers name "\u00e5lice".
        ("header in UTF-8", "/f/header", ["-H", "X-User-Id: \u00e5lice"], None, "\u00e5lice"),
        ("cookie", "/f/cookie", ["-b", "session=s1; other=x"], ["-b", "session=s2"], "s1"),
        ("query", "/f/query?api_key=k%201&x=1", [], None, "k 1"),
        ("path", "/f/path/one", [], None, "/f/path/one"),
        ("method", "/f/method", ["-X", "DELETE"], ["-X", "PUT"], "DELETE"),
        ("host", "/f/host", ["-H", "Host: tenant1.example:8080"], ["-H", "Host: tenant2.example"],
         "tenant1.example"),
        ("client ip", "/f/ip", [], None, "127.0.0.1"),
        ("JWT HS256 sub", "/f/jwt", ["-H", "Authorization: Bearer " + jwt_hs256({"sub": "hs-user", "exp": now + 600})],
         ["-H", "Authorization: Bearer " + jwt_hs256({"sub": "hs-other"})], "hs-user"),
        ("JWT RS256 sub", "/f/jwt", ["-H", "Authorization: Bearer " + jwt_openssl({"sub": "rs-user"}, keys["rsa"][0],
                                                                                 "RS256")], None, "rs-user"),
        ("JWT ES256 sub", "/f/jwt", ["-H", "Authorization: Bearer " + jwt_openssl({"sub": "es-user", "nbf": now - 5},
                                                                                 keys["ec"][0], "ES256")], None,
         "es-user"),
    ]
    limit_of = {"header": "f_header", "header in UTF-8": "f_header", "cookie": "f_cookie", "query": "f_query",
                "path": "f_path", "method": "f_method", "host": "f_host", "client ip": "f_ip"}
    for kind, path, args, other, key in cases:
        statuses = [curl(gate.url + path, *args).status for _ in range(3)]
        limit = "gate_" + limit_of.get(kind, "f_jwt")
        check(f"fields: {kind}: the third request of one value is denied, keyed by its raw value {key!r}",
              statuses == [200, 200, 429] and units_left(key, limit) == 0, f"{statuses}, {key!r} holds "
              f"{units_left(key, limit)}")
        if other:
            check(f"fields: {kind}: another value has a limit of its own", curl(gate.url + path, *other).status == 200)
    # Forged, expired, not yet valid and unsigned tokens name no one: they go to on_missing's key, never to
    # the victim's. (The victim's key is full, so draining it would show.)
    bad = [
        ("forged (another secret)", jwt_hs256({"sub": "victim"}, secret="not the gate's secret, long enough........")),
        ("expired", jwt_hs256({"sub": "victim", "exp": now - 10})),
        ("not yet valid", jwt_hs256({"sub": "victim", "nbf": now + 3600})),
        ("alg none", b64(b'{"alg":"none"}') + "." + b64(b'{"sub":"victim"}') + "."),
        ("RS256 signed by an unknown key", None),
    ]
    stranger = os.path.join(WORK, "stranger.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", stranger],
                   check=True, capture_output=True)
    bad[-1] = (bad[-1][0], jwt_openssl({"sub": "victim"}, stranger, "RS256"))
    anonymous_before = units_left("anonymous", "gate_f_jwt")
    results = []
    for name, token in bad:
        r = curl(gate.url + "/f/jwt", "-H", "Authorization: Bearer " + token)
        results.append(r.status)
    check("fields: forged, expired, not-yet-valid, alg none and unknown-key JWTs never touch the victim's key",
          units_left("victim", "gate_f_jwt") == 2, f"victim holds {units_left('victim', 'gate_f_jwt')}")
    check("fields: ... they count against on_missing's key:anonymous instead (2 admitted, then denied)",
          anonymous_before == 2 and results == [200, 200, 429, 429, 429] and units_left("anonymous", "gate_f_jwt") == 0,
          f"{results}, anonymous held {anonymous_before}")
    r = curl(gate.url + "/f/reject")
    check("fields: on_missing: reject answers 400 naming the limit",
          r.status == 400 and r.json() == {"error": "missing_request_field", "limit": "f_reject"}, str(r.body))
    check("fields: on_missing: reject lets a request with the field through",
          curl(gate.url + "/f/reject", "-H", "X-Api-Key: k").status == 200)
    r = curl(gate.url + "/f/header", "-H", "X-User-Id: " + "x" * 1025)
    check("fields: a value over 1024 bytes (the extension's key limit) is a 400, never a bypass",
          r.status == 400 and r.json().get("error") == "bad_request_field", f"{r.status} {r.body[:200]}")


def test_monitor(gate, backend):
    responses = [curl(gate.url + "/monitor") for _ in range(4)]
    flags = [r.header("x-ratelimit-would-deny") for r in responses]
    check("monitor: every request goes through", [r.status for r in responses] == [200] * 4,
          str([r.status for r in responses]))
    check("monitor: X-RateLimit-Would-Deny: true to the client only when it would have been denied",
          flags == [None, None, "true", "true"], str(flags))
    seen = [e["headers"].get("x-ratelimit-would-deny") for e in get_json(f"http://127.0.0.1:{backend}/_stats")
            ["requests"] if e["path"] == "/monitor"]
    check("monitor: ... and to the backend likewise", seen == [None, None, "true", "true"], str(seen))
    fields = re.fullmatch(r'"monitor";r=0;t=(\d+)', responses[3].header("ratelimit") or "")
    check("monitor: the would-be denial carries the RateLimit fields",
          fields is not None and 3590 <= int(fields.group(1)) <= 3600, str(responses[3].header("ratelimit")))
    check("monitor: a would-be denial consumes nothing (the key stays at 0, not in debt)",
          units_left("monitor", "gmon_monitor") == 0)
    # Monitored requests count in the limit's monitoring twin (gmon_<key>), never in the enforced one.
    check("monitor: monitored requests never spend the enforced limit (gate_monitor untouched)",
          units_left("monitor", "gate_monitor") == 2)


def raw_request(port, request, read=True, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(request)
    if not read:
        return s
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return s, data


def test_throttle(gate, backend):
    # burst 2 per 2 s, max_throttle 3 s: one unit per second.
    first = [curl(gate.url + "/throttle") for _ in range(2)]
    started = time.time()
    third = curl(gate.url + "/throttle")
    waited = time.time() - started
    check("throttle: the first two pass at once", [r.status for r in first] == [200, 200])
    check(f"throttle: the third is delayed by about retry_after (1 s; waited {waited:.2f} s), then answered 200",
          third.status == 200 and 0.6 <= waited <= 2.5, f"{third.status} after {waited:.2f} s")
    check("throttle: the access log says throttled", len(gate.access_lines("decision=throttled")) >= 1)
    # Now in debt up to the limit's max_reserved: a request would wait about 2 s more. Send one and hang up.
    before = sum(1 for e in get_json(f"http://127.0.0.1:{backend}/_stats")["requests"] if e["path"] == "/throttle")
    # The key's time to full: a check of the whole capacity (2) is denied while the key is not full, and a
    # denial reports the state as it is (a check of 1 would report it after taking that unit, when allowed).
    state = "SELECT extract(epoch FROM reset_after) FROM rate_limit_check('throttle', 'gate_throttle', 2)"
    reset_before, at_before = float(psql(state)), time.time()
    s = raw_request(gate.port, b"GET /throttle HTTP/1.1\r\nHost: t\r\n\r\n", read=False)
    time.sleep(0.4)
    reserved = float(psql(state)) - (reset_before - (time.time() - at_before))
    s.close()
    time.sleep(1.0)
    given_back = float(psql(state)) - (reset_before - (time.time() - at_before))
    check(f"throttle: while the client waits its reservation is held (+{reserved:.2f} s of debt)",
          0.8 <= reserved <= 1.2, f"{reserved:.3f}")
    check(f"throttle: the client hangs up: its reservation is given back within a second ({given_back:+.2f} s)",
          abs(given_back) <= 0.15, f"{given_back:.3f}")
    time.sleep(2.5)  # past the moment it would have been forwarded
    after = sum(1 for e in get_json(f"http://127.0.0.1:{backend}/_stats")["requests"] if e["path"] == "/throttle")
    check("throttle: ... and the request never reached the backend", after == before, f"{before} -> {after}")
    check("throttle: the access log says cancelled (499)",
          len([l for l in gate.access_lines("decision=cancelled") if '" 499 ' in l]) == 1)
    check("throttle: /metrics counts the refund", metric(gate.metrics(), 'pg_ratelimit_gate_refunds_total{result="ok"}')
          == 1)
    # Beyond max_throttle: denied at once (the debt allows 3 s; a fresh burst of 6 queues past it).
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(curl(gate.url + "/throttle").status)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("throttle: requests that cannot pass within max_throttle are denied, the others throttled",
          statuses.count(429) >= 3 and statuses.count(200) >= 2, str(sorted(statuses)))


def test_map(gate, backend):
    get_json(f"http://127.0.0.1:{backend}/_control?map=ok")
    calls_before = get_json(f"http://127.0.0.1:{backend}/_stats")["map_calls"]
    statuses = [curl(gate.url + "/mapped/a", "-H", "X-User: john.smith") for _ in range(3)]
    check("map: the endpoint's limit applies (interval 0.5 s in a window of 1 s: 2, then 429)",
          [r.status for r in statuses] == [200, 200, 429], str([r.status for r in statuses]))
    check("map: its RateLimit item is named by its comment", statuses[0].header("ratelimit-policy") == '"user";q=2;w=1',
          str(statuses[0].header("ratelimit-policy")))
    name = psql("SELECT name FROM rate_limit_config WHERE name LIKE 'gate_map_%' ORDER BY name LIMIT 1")
    check("map: its limit is defined in the database (gate_map_<numbers>)",
          name == "gate_map_gcra_durable_2_per_1s_throttle_0s", name)
    calls = get_json(f"http://127.0.0.1:{backend}/_stats")["map_calls"] - calls_before
    check("map: answers are cached per request identity (3 requests, 1 call)", calls == 1, str(calls))
    seen = get_json(f"http://127.0.0.1:{backend}/_stats")["requests"][-1]["headers"]
    check("map: the request reached the backend unchanged by the map call", seen.get("x-user") == "john.smith")
    r = curl(gate.url + "/mapped/expensive", "-H", "X-User: jane")
    check("map: several limits from one answer",
          r.header("ratelimit-policy") == '"user";q=2;w=1, "expensive";q=3;w=60', str(r.header("ratelimit-policy")))
    get_json(f"http://127.0.0.1:{backend}/_control?map=fail")
    r = curl(gate.url + "/mapped/a", "-H", "X-User: someone-new")
    check("map: the endpoint fails: failure_mode closed answers 503",
          r.status == 503 and r.json() == {"error": "limiter_unavailable", "reason": "map-endpoint-unavailable"},
          f"{r.status} {r.body}")
    check("map: a cached answer still serves while the endpoint fails",
          curl(gate.url + "/mapped/expensive", "-H", "X-User: jane").status in (200, 429))
    get_json(f"http://127.0.0.1:{backend}/_control?map=garbage")
    r = curl(gate.url + "/mapped/a", "-H", "X-User: another")
    check("map: an answer that is not the expected JSON fails the same way", r.status == 503, str(r.status))
    get_json(f"http://127.0.0.1:{backend}/_control?map=ok")
    check("map: the endpoint back: requests decided again",
          curl(gate.url + "/mapped/a", "-H", "X-User: recovered").status == 200)


def test_bodies(gate):
    big = os.urandom(20 * 1024 * 1024)
    upload = os.path.join(WORK, "upload.bin")
    with open(upload, "wb") as f:
        f.write(big)
    digest = hashlib.sha256(big).hexdigest()
    r = curl(gate.url + "/upload", "--data-binary", "@" + upload, "-H", "Content-Type: application/octet-stream")
    body = r.json() if r.status == 200 else {}
    check("bodies: a 20 MiB upload with Content-Length arrives intact",
          body.get("body_length") == len(big) and body.get("body_sha256") == digest, f"{r.status} {r.body[:300]}")
    r = curl(gate.url + "/upload", "--data-binary", "@" + upload, "-H", "Transfer-Encoding: chunked")
    body = r.json() if r.status == 200 else {}
    check("bodies: a 20 MiB chunked upload arrives intact, still chunked",
          body.get("body_length") == len(big) and body.get("body_sha256") == digest
          and body.get("headers", {}).get("transfer-encoding") == "chunked", f"{r.status} {r.body[:300]}")
    r = curl(gate.url + "/upload", "--data-binary", "@" + upload, "-H", "Expect: 100-continue")
    check("bodies: Expect: 100-continue answered by the gate, the body forwarded",
          r.status == 200 and r.json().get("body_sha256") == digest, f"{r.status}")
    pattern = (bytes(range(256)) * (30 * 1024 * 1024 // 256 + 1))[:30 * 1024 * 1024]
    r = curl(gate.url + "/big?n=31457280")
    check("bodies: a 30 MiB download arrives intact",
          r.status == 200 and hashlib.sha256(r.body).digest() == hashlib.sha256(pattern).digest()
          and r.header("ratelimit") is not None, f"{r.status} {len(r.body)}")
    r = curl(gate.url + "/chunked?n=5000000")
    check("bodies: a chunked download arrives intact, chunked",
          r.status == 200 and r.body == pattern[:5000000] and r.header("transfer-encoding") == "chunked",
          f"{r.status} {len(r.body)} {r.header('transfer-encoding')}")
    # HEAD then GET on one connection: the HEAD answer has Content-Length 1000 and no body, so the GET's
    # answer follows its header at once.
    s = socket.create_connection(("127.0.0.1", gate.port), timeout=10)
    s.sendall(b"HEAD /big?n=1000 HTTP/1.1\r\nHost: h\r\n\r\nGET /hello HTTP/1.1\r\nHost: h\r\n\r\n")
    data = b""
    while data.count(b"\r\n\r\n") < 2 and len(data) < 100000:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    check("bodies: HEAD gets the fields and no body, and the connection goes on",
          head.startswith(b"HTTP/1.1 200") and b"Content-Length: 1000" in head and rest.startswith(b"HTTP/1.1 200"),
          repr(data[:400]))
    # Several requests on one connection (keep-alive on both sides).
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w",
                          "%{num_connects} ", gate.url + "/hello", gate.url + "/hello", gate.url + "/hello"],
                         capture_output=True, text=True)
    check("bodies: keep-alive: three requests, one connection", out.stdout.split() == ["1", "0", "0"], out.stdout)


def test_backend_down(gate):
    r = curl(gate.url + "/down")
    check("backend down: 502 with a JSON error",
          r.status == 502 and r.json() == {"error": "backend_unavailable"}, f"{r.status} {r.body}")


def test_slow_clients(gate):
    slow = []
    for _ in range(40):  # unfinished headers, one byte at a time
        s = socket.create_connection(("127.0.0.1", gate.port))
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: slow\r\n")
        slow.append(s)
    # A client that asks for 50 MB and never reads it: the gate's write to it cannot finish.
    stuck = socket.create_connection(("127.0.0.1", gate.port))
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(b"GET /big?n=52428800 HTTP/1.1\r\nHost: stuck\r\n\r\n")
    time.sleep(0.5)
    results = []
    started = time.time()
    for _ in range(20):
        results.append(curl(gate.url + "/hello", timeout=10).status)
    took = time.time() - started
    check(f"slow: 20 requests answered while 40 clients send headers byte by byte and one never reads "
          f"({took:.2f} s)", results == [200] * 20, str(results))
    for s in slow[:5]:
        s.sendall(b"X-Late: 1\r\n\r\n")
    answers = []
    for s in slow[:5]:
        s.settimeout(10)
        answers.append(s.recv(100).split(b"\r\n")[0])
    check("slow: the slow clients are served once their headers end", answers == [b"HTTP/1.1 200 OK"] * 5,
          str(answers))
    for s in slow + [stuck]:
        s.close()


def test_metrics(gate):
    text = gate.metrics()
    checks = {
        'pg_ratelimit_gate_decisions_total{route="/aon/*",decision="denied"}': lambda v: v == 1,
        'pg_ratelimit_gate_decisions_total{route="/throttle",decision="throttled"}': lambda v: v >= 1,
        'pg_ratelimit_gate_decisions_total{route="/monitor",decision="would_deny"}': lambda v: v == 2,
        'pg_ratelimit_gate_decisions_total{route="/f/reject*",decision="rejected"}': lambda v: v == 1,
        'pg_ratelimit_gate_limit_decisions_total{route="/aon/*",limit="user",decision="denied"}': lambda v: v >= 1,
        'pg_ratelimit_gate_limiter_call_seconds_count': lambda v: v > 50,
        'pg_ratelimit_gate_database_connections_ready': lambda v: v == 4,
    }
    for name, test in checks.items():
        value = metric(text, name)
        check(f"metrics: {name} = {value}", value is not None and test(value))
    status, body = gate.health()
    check("metrics: /healthz 200 with the database up", status == 200 and body["database"] == "up", str(body))


def pg_ctl(*args):
    subprocess.run([*RUN_AS, os.path.join(PG_BIN, "pg_ctl"), "-D", PG_DATA, "-w", "-t", "60", *args],
                   check=True, capture_output=True)


def test_restart(open_gate, closed_gate):
    # Load on both gates throughout (wrk), and curl probes every 100 ms, while the server stops for 2 s.
    load = [subprocess.Popen(["wrk", "-t1", "-c4", "-d9s", open_gate.url + "/hello"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True),
            subprocess.Popen(["wrk", "-t1", "-c4", "-d9s", closed_gate.url + "/closed"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)]
    probes = []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            a = curl(open_gate.url + "/hello", timeout=5)
            b = curl(closed_gate.url + "/closed", timeout=5)
            probes.append((time.time(), a.status, a.header("ratelimit-bypassed"), a.header("ratelimit"), b.status))
            time.sleep(0.1)

    prober = threading.Thread(target=probe)
    prober.start()
    time.sleep(2)
    down_at = time.time()
    pg_ctl("-m", "fast", "stop")
    time.sleep(1)
    health_open, health_closed = open_gate.health(), closed_gate.health()
    time.sleep(1)
    pg_ctl("-l", PG_LOG, "-o", PG_OPTIONS, "start")
    up_at = time.time()
    time.sleep(5)
    stop.set()
    prober.join()
    for p in load:
        p.communicate()
    during = [p for p in probes if down_at + 0.3 < p[0] < up_at]
    after = [p for p in probes if p[0] > up_at + 3]
    check(f"restart: database down, failure_mode open: forwarded with RateLimit-Bypassed: database-unavailable "
          f"({len(during)} probes)",
          during and all(p[1] == 200 and p[2] == "database-unavailable" for p in during), str(during[:5]))
    check("restart: database down, failure_mode closed: 503", during and all(p[4] == 503 for p in during),
          str([p[4] for p in during]))
    check("restart: /healthz while down: open 200 degraded, closed 503",
          health_open[0] == 200 and health_open[1]["database"] == "down" and health_closed[0] == 503,
          f"{health_open} {health_closed}")
    check(f"restart: both gates decide again by themselves after the restart ({len(after)} probes)",
          after and all(p[1] == 200 and p[2] is None and p[3] and p[4] == 200 for p in after), str(after[:5]))
    check("restart: the gate logged the lost connection and the recovery",
          any("database connection lost" in l for l in open(open_gate.log))
          and any("ready again" in l for l in open(open_gate.log)))
    status, body = open_gate.health()
    check("restart: /healthz up again", status == 200 and body["database"] == "up", str(body))


def test_reconfigure(gate, config_path, backend, keys):
    # f_header allows 2 per hour; alice used both. Twice the burst: proportional rescale keeps her at 0 of 4.
    text = main_config(backend, keys).replace(
        "      - key: f_header\n        burst: 2\n", "      - key: f_header\n        burst: 4\n")
    write(os.path.basename(config_path), text)
    gate.stop()
    gate.start()
    row = psql("SELECT rate, capacity FROM rate_limit_config WHERE name = 'gate_f_header'")
    check("reconfigure: a restarted gate redefines a changed limit", row == "4|4", row)
    check("reconfigure: its keys rescale proportionally (bob: 1 of 2 left -> 2 of 4)",
          units_left("bob", "gate_f_header") == 2, str(units_left("bob", "gate_f_header")))
    r = curl(gate.url + "/f/header", "-H", "X-User-Id: bob")
    check("reconfigure: the fields show the new policy",
          r.status == 200 and r.header("ratelimit-policy") == '"f_header";q=4;w=3600', str(r.header("ratelimit-policy")))


def main():
    started = time.time()
    backend = free_port()
    start([sys.executable, os.path.join(HERE, "backend.py"), str(backend)], "backend.log")
    for _ in range(100):
        try:
            get_json(f"http://127.0.0.1:{backend}/_stats")
            break
        except Exception:
            time.sleep(0.1)
    keys = make_keys()
    config = write("gate.yaml", main_config(backend, keys))
    gates = []
    try:
        steps = [("config", lambda: test_config(backend, keys))]
        # gate1 runs with PGCLIENTENCODING=LATIN1: its keys must still reach the server as UTF-8 (test_fields).
        gate1 = Gate(config, "gate1", dict(os.environ, PGCLIENTENCODING="LATIN1")).start()
        gate2 = Gate(config, "gate2").start()  # the same file: --listen and --admin-listen tell them apart
        gate3 = Gate(write("map.yaml", map_config(backend)), "gate3").start()
        gates += [gate1, gate2, gate3]
        steps += [
            ("defined", lambda: test_defined(gate1)),
            ("headers", lambda: test_headers(gate1)),
            ("exact", lambda: test_exact(gate1, gate2, backend)),
            ("all-or-nothing", lambda: test_all_or_nothing(gate2)),
            ("fields", lambda: test_fields(gate1, keys)),
            ("monitor", lambda: test_monitor(gate1, backend)),
            ("throttle", lambda: test_throttle(gate1, backend)),
            ("map", lambda: test_map(gate3, backend)),
            ("bodies", lambda: test_bodies(gate1)),
            ("backend down", lambda: test_backend_down(gate1)),
            ("slow clients", lambda: test_slow_clients(gate2)),
            ("metrics", lambda: test_metrics(gate1)),
            ("restart", lambda: test_restart(gate2, gate3)),
            ("reconfigure", lambda: test_reconfigure(gate1, config, backend, keys)),
        ]
        for name, step in steps:
            print(f"-- {name}", flush=True)
            try:
                step()
            except Exception:
                check(f"{name}: ran to the end", False, traceback.format_exc())
    finally:
        for gate in gates:
            gate.stop()
        for proc in PROCESSES:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)
    if FAILURES:
        for g in ("gate1", "gate2", "gate3"):
            path = os.path.join(WORK, g + ".log")
            if os.path.exists(path):
                print(f"--- the last lines of {g}'s log (errors only) ---")
                print("".join([l for l in open(path, errors="replace") if "pg_ratelimit_gate:" in l][-15:]))
    print(f"{len(FAILURES)} of {CASES} checks failed" if FAILURES else f"all {CASES} checks passed")
    print(f"cases: {CASES} ({time.time() - started:.0f} s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
