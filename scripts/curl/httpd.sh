#!/usr/bin/env bash
# httpd.sh start|stop: a local Apache httpd (with mod_http2, mod_ssl, mod_dav) for the curl
# tests, meant as a perfbisect test's setup and teardown.
#
# start: makes the test's state folder (see common.sh), its files (10k, 512k, the parallel
#   download file and the single big one, sparse, sized by CURL_PERF_SCALE) and a self-signed
#   certificate for localhost, picks two free loopback ports (clear-text HTTP/1.1 and HTTPS
#   with h2 and http/1.1), starts httpd and waits until both answer. The ports go to
#   STATE/ports (HTTP_PORT=..., HTTPS_PORT=...). A watchdog stops the server after
#   CURL_PERF_HTTPD_TTL seconds (default 7200) should the teardown never come. The folder
#   records which perfbisect process (PERFBISECT_RUN) owns it: another live one's server is
#   never stopped or restarted (start says who holds it and fails); folders of perfbisect
#   processes that are gone are cleaned up.
# stop: stops that httpd and its watchdog (the whole watchdog, its sleep included) and removes
#   the state folder; nothing is left running.
#
# APACHE names the httpd binary (default: apache2 or httpd from PATH or /usr/sbin);
# APACHE_MODULES the folder of its modules (default: Debian's /usr/lib/apache2/modules and
# the usual others).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/common.sh
. "$here/common.sh"

dir=$(state_dir)

find_apache() {
    local c
    if [ -n "${APACHE:-}" ]; then echo "$APACHE"; return; fi
    for c in apache2 httpd /usr/sbin/apache2 /usr/sbin/httpd; do
        if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return; fi
    done
    die "no Apache httpd found (Debian package apache2); set APACHE"
}

find_modules() {
    local d
    for d in "${APACHE_MODULES:-}" /usr/lib/apache2/modules /usr/lib/httpd/modules /usr/lib64/httpd/modules /usr/libexec/apache2; do
        if [ -n "$d" ] && [ -f "$d/mod_http2.so" ]; then echo "$d"; return; fi
    done
    die "no folder with mod_http2.so found; set APACHE_MODULES"
}

# A port nothing listens on, in 20000..59999.
free_port() {
    local p n
    for n in $(seq 1 50); do
        p=$((20000 + (RANDOM * 32768 + RANDOM + n) % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    die "no free port found"
}

answers() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# stop_dir DIR: stop the httpd and the watchdog of one state folder and remove it.
stop_dir() {
    local d=$1 pid n
    if [ -f "$d/watchdog.pid" ]; then
        # The watchdog leads a process group of its own (setsid): its sleep goes with it.
        pid=$(cat "$d/watchdog.pid")
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    fi
    if [ -f "$d/httpd.pid" ]; then
        pid=$(cat "$d/httpd.pid")
        kill -TERM "$pid" 2>/dev/null || true
        for n in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            [ "$n" -lt 100 ] || kill -KILL "$pid" 2>/dev/null || true
            sleep 0.1
        done
    fi
    rm -rf "$d"
}

# Whether another live perfbisect process owns this test's folder (CURL_PERF_STATE shared).
held_by_other() {
    local owner
    [ -f "$dir/owner" ] || return 1
    owner=$(cat "$dir/owner")
    [ "$owner" != "${PERFBISECT_RUN:-}" ] && run_alive "$owner"
}

# Folders of perfbisect processes that are gone (killed before their teardown).
clean_stale() {
    local root d t
    [ -z "${CURL_PERF_STATE:-}" ] || return 0
    root=$(state_root)
    [ -d "$root" ] || return 0
    for d in "$root"/*/; do
        [ -d "$d" ] || continue
        d=${d%/}
        [ "$(basename "$d")" != "${PERFBISECT_RUN:-default}" ] || continue
        run_alive "$(basename "$d")" && continue
        for t in "$d"/*/; do
            [ -d "$t" ] && stop_dir "${t%/}"
        done
        rmdir "$d" 2>/dev/null || true
    done
}

stop() {
    if held_by_other; then
        echo "$(basename "$0"): $dir belongs to another running perfbisect ($(cat "$dir/owner")); left as it is" >&2
        return 0
    fi
    stop_dir "$dir"
    # The perfbisect process's own folder goes once its last test's server is stopped.
    [ -n "${CURL_PERF_STATE:-}" ] || rmdir "$(dirname "$dir")" 2>/dev/null || true
}

write_conf() {
    local mods=$1 user_lines=""
    if [ "$(id -u)" = 0 ]; then
        # httpd refuses to serve as root: its children run as nobody.
        user_lines="User nobody
Group #$(id -g nobody)"
    fi
    cat >"$dir/httpd.conf" <<CONF
ServerRoot "$dir"
ServerName localhost
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error.log"
LogLevel warn
Mutex file:$dir default
$user_lines
LoadModule mpm_event_module "$mods/mod_mpm_event.so"
LoadModule authz_core_module "$mods/mod_authz_core.so"
LoadModule ssl_module "$mods/mod_ssl.so"
LoadModule http2_module "$mods/mod_http2.so"
LoadModule alias_module "$mods/mod_alias.so"
LoadModule dav_module "$mods/mod_dav.so"
LoadModule dav_fs_module "$mods/mod_dav_fs.so"

Listen 127.0.0.1:$HTTP_PORT
Listen 127.0.0.1:$HTTPS_PORT https
StartServers 2
ServerLimit 2
ThreadLimit 128
ThreadsPerChild 128
MaxRequestWorkers 256
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
EnableSendfile On
EnableMMAP On
LimitRequestBody 0
H2MaxSessionStreams 100
# Responses of one length every time: an ETag's length follows the file's inode and mtime, and
# curl keeps the headers it gets, so it would move single-maxalloc from one server to the next.
FileETag None
ServerTokens Prod
Protocols http/1.1

DocumentRoot "$dir/htdocs"
<Directory "$dir/htdocs">
    Require all granted
</Directory>
Alias /upload "$dir/upload"
DavLockDB "$dir/dav/lock"
<Directory "$dir/upload">
    Dav On
    Require all granted
</Directory>

SSLSessionCache none
<VirtualHost 127.0.0.1:$HTTPS_PORT>
    Protocols h2 http/1.1
    SSLEngine on
    SSLCertificateFile "$dir/cert.pem"
    SSLCertificateKeyFile "$dir/key.pem"
</VirtualHost>
CONF
}

start() {
    local apache mods s big huge try n
    apache=$(find_apache)
    mods=$(find_modules)
    s=$(curl_perf_scale)
    if held_by_other; then
        die "$dir is in use by another running perfbisect (PERFBISECT_RUN $(cat "$dir/owner"), pid $(cut -d- -f1 "$dir/owner")); give this one another CURL_PERF_STATE"
    fi
    clean_stale
    stop
    mkdir -p "$dir/htdocs" "$dir/upload" "$dir/dav"
    echo "${PERFBISECT_RUN:-}" >"$dir/owner"
    chmod 755 "$dir" "$dir/htdocs"
    chmod 777 "$dir/upload" "$dir/dav"
    head -c 10240 /dev/urandom >"$dir/htdocs/10k"
    head -c 524288 /dev/urandom >"$dir/htdocs/512k"
    # The big files are sparse: they take no disk space, and the page cache serves them.
    big=$(scaled 500000000)
    huge=$(scaled 100000000000)
    truncate -s "$big" "$dir/htdocs/big"
    truncate -s "$huge" "$dir/htdocs/huge"
    truncate -s "$big" "$dir/upload-source"
    chmod 644 "$dir/htdocs/"*
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3 \
        -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" >/dev/null 2>&1 ||
        die "openssl could not make a certificate"

    for try in 1 2 3 4 5; do
        HTTP_PORT=$(free_port)
        HTTPS_PORT=$(free_port)
        [ "$HTTP_PORT" != "$HTTPS_PORT" ] || continue
        write_conf "$mods"
        if "$apache" -f "$dir/httpd.conf" -k start >"$dir/start.log" 2>&1; then
            for n in $(seq 1 100); do
                if answers "$HTTP_PORT" && answers "$HTTPS_PORT"; then
                    printf 'HTTP_PORT=%s\nHTTPS_PORT=%s\nSCALE=%s\n' "$HTTP_PORT" "$HTTPS_PORT" "$s" >"$dir/ports"
                    # shellcheck disable=SC2016 # expanded by the watchdog's own shell
                    setsid sh -c 'sleep "$1"; kill "$(cat "$2")"' watchdog \
                        "${CURL_PERF_HTTPD_TTL:-7200}" "$dir/httpd.pid" </dev/null >/dev/null 2>&1 &
                    echo $! >"$dir/watchdog.pid"
                    echo "httpd on 127.0.0.1:$HTTP_PORT (http) and :$HTTPS_PORT (https, h2), state in $dir"
                    return 0
                fi
                [ -f "$dir/httpd.pid" ] || [ "$n" -lt 30 ] || break
                sleep 0.1
            done
        fi
        echo "attempt $try failed:" >&2
        cat "$dir/start.log" "$dir/error.log" >&2 2>/dev/null || true
        if [ -f "$dir/httpd.pid" ]; then kill "$(cat "$dir/httpd.pid")" 2>/dev/null || true; fi
        sleep 0.5
    done
    die "httpd did not start"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
    echo "usage: $(basename "$0") start|stop" >&2
    exit 2
    ;;
esac
