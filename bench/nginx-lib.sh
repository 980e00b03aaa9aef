# shellcheck shell=bash
# Shared by the HTTP bench scripts (sourced, not run): the server on one
# CPU and the client on another, the client's CPU time from
# bench/runstat.py, and one nginx worker serving the classic 92-byte page
# and a 1 MiB file from $WORK/www. bench/lib.sh comes with it.

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# SERVER_CPU and CLIENT_CPU: different CPUs when there are two or more.
if [ "$(nproc)" -ge 2 ]; then SERVER_CPU=0; CLIENT_CPU=1; else SERVER_CPU=0; CLIENT_CPU=0; fi
pin_client() { taskset -c "$CLIENT_CPU" "$@"; }
# "CPU_SECONDS MAXRSS_KIB" from a runstat line in file $1.
cpu_of() { awk -F'[ =]' '/^runstat:/{print $3+$5, $7}' "$1"; }
# The user-space part of that CPU time, in seconds.
user_of() { awk -F'[ =]' '/^runstat:/{print $3}' "$1"; }
# How often the client slept and had to be woken (voluntary switches).
sleeps_of() { awk -F'[ =]' '/^runstat:/{print $13}' "$1"; }

# bench_workdir: a fresh $WORK with an empty $WORK/results, and a trap
# that, however the script ends, stops the nginx of $WORK/nginx.pid, the
# processes given to kill_at_exit and the PostgreSQL cluster of $PG
# (scripts/pg) if the script started them, then removes $WORK.
bench_workdir() {
  WORK=$(mktemp -d)
  PG=""
  AT_EXIT_PIDS=""
  trap bench_cleanup EXIT
  : >"$WORK/results"
}
# kill_at_exit PID: bench_workdir's trap kills PID too.
kill_at_exit() { AT_EXIT_PIDS="$AT_EXIT_PIDS $1"; }
bench_cleanup() {
  kill "$(cat "$WORK/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  # shellcheck disable=SC2086
  [ -z "$AT_EXIT_PIDS" ] || kill $AT_EXIT_PIDS 2>/dev/null || true
  [ -n "$PG" ] && scripts/pg stop "$PG"
  rm -rf "$WORK"
}

# bench_nginx LISTEN_FLAGS [HTTP_DIRECTIVES]: how the scripts that load one
# nginx worker start: $DYNO (dyno_build), $WORK (bench_workdir) and nginx
# serving from it (start_nginx).
bench_nginx() {
  dyno_build
  bench_workdir
  start_nginx "$@"
}

# bench_pg DYNO: a throwaway PostgreSQL cluster (scripts/pg; $PG, which
# bench_workdir's trap stops), its libpq environment exported, DYNO_HOME
# under $WORK, and pgbench's tables at scale 10 made by DYNO.
bench_pg() {
  PG=$(scripts/pg start)
  # shellcheck disable=SC1091
  . "$PG/env"
  export DYNO_HOME=$WORK/home
  chmod 777 "$WORK"
  "$1" db init --scale 10 >/dev/null
}

# start_nginx LISTEN_FLAGS [HTTP_DIRECTIVES]: one worker pinned to
# SERVER_CPU on a free loopback port (set in PORT), stopped by the
# caller's trap through $WORK/nginx.pid. $WORK must exist.
start_nginx() {
  mkdir -p "$WORK/www"
  printf '%s' "$(head -c 91 /dev/zero | tr '\0' 'x')" > "$WORK/www/hello.html"; echo >> "$WORK/www/hello.html"
  head -c 1048576 /dev/urandom > "$WORK/www/1m.bin"
  # nginx's workers run as an unprivileged user: let them read the files.
  chmod -R a+rX "$WORK"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat > "$WORK/nginx.conf" <<CONF
worker_processes 1;
worker_cpu_affinity $(python3 -c "print(format(1<<$SERVER_CPU,'b'))");
worker_rlimit_nofile 30000;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
daemon on;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  sendfile on;
  ${2:-}
  server { listen 127.0.0.1:$PORT $1 backlog=4096; root $WORK/www; }
}
CONF
  nginx -c "$WORK/nginx.conf" -p "$WORK"
  sleep 0.5
}

# The nginx worker's CPU time so far, in clock ticks (user + system), from
# /proc: read before and after a client's run, it gives what serving that
# client cost the server.
nginx_ticks() {
  local w
  w=$(pgrep -P "$(cat "$WORK/nginx.pid")" | head -1)
  awk '{print $14+$15}' "/proc/$w/stat"
}

# start_caddy: one Caddy process (Debian's `caddy`, GOMAXPROCS=1, on
# SERVER_CPU) serving the 92-byte page and a 1 MiB file from $WORK/www
# over HTTPS (its internal CA) with HTTP/1.1, HTTP/2 and HTTP/3 on $PORT,
# TCP and UDP alike; its log in $WORK/caddy.log (a file: Go ends a program
# whose stderr pipe closed). bench_workdir's trap stops it.
start_caddy() {
  need_tools caddy caddy caddy
  mkdir -p "$WORK/www"
  printf '<html><head><title>dyno</title></head><body><h1>Hello</h1><p>a 92-byte page</p></body>\n</html>\n' | head -c 92 >"$WORK/www/hello.html"
  head -c 1048576 /dev/urandom >"$WORK/www/1m.bin"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$WORK/Caddyfile" <<EOF
{
  admin off
  auto_https disable_redirects
  skip_install_trust
  storage file_system $WORK/data
  default_sni 127.0.0.1
  servers {
    protocols h1 h2 h3
  }
}
https://127.0.0.1:$PORT {
  tls internal
  root * $WORK/www
  file_server
}
EOF
  HOME=$WORK GOMAXPROCS=1 taskset -c "$SERVER_CPU" caddy run --adapter caddyfile --config "$WORK/Caddyfile" >"$WORK/caddy.log" 2>&1 &
  kill_at_exit $!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
  done
  sleep 0.5
}
