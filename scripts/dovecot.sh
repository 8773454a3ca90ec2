#!/usr/bin/env bash
# A throw-away Dovecot IMAP server on 127.0.0.1 for the e-mail tests (issue #10).
#   scripts/dovecot.sh DIR PORT        -> starts it (detached), prints DOVECOT_PORT=…, DOVECOT_DIR=…
#   scripts/dovecot.sh --status DIR    -> prints the same and exits 0 when it is running there
#   scripts/dovecot.sh --stop DIR
#   scripts/dovecot.sh --add-user DIR EMAIL PASSWORD
# Config: passwd-file users, Maildir homes in a temp dir, plaintext auth on loopback only,
# SPECIAL-USE mailboxes Sent/Drafts/Trash/Junk/Archive. Needs the Debian package
# dovecot-imapd (installed here with apt-get when missing and we are root).
set -euo pipefail
if [[ ${1:-} == --status ]]; then
  d=$2
  [[ -f $d/run/master.pid && -f $d/port ]] && kill -0 "$(cat "$d/run/master.pid")" 2>/dev/null \
    && (exec 3<>"/dev/tcp/127.0.0.1/$(cat "$d/port")") 2>/dev/null \
    && { echo "DOVECOT_PORT=$(cat "$d/port")"; echo "DOVECOT_DIR=$d"; exit 0; }
  exit 1
fi
if [[ ${1:-} == --stop ]]; then
  d=$2; [[ -f $d/run/master.pid ]] && kill "$(cat "$d/run/master.pid")" 2>/dev/null || true
  [[ -f $d/maildir.path ]] && rm -rf "$(cat "$d/maildir.path")"; exit 0
fi
if [[ ${1:-} == --add-user ]]; then
  d=$2; printf '%s:{PLAIN}%s::::::\n' "$3" "$4" >> "$(cat "$d/maildir.path")/users"; exit 0
fi
d=$1; port=$2
if ! command -v dovecot >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "dovecot missing and not root" >&2; exit 1; }
  apt-get install -y -qq dovecot-imapd >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq dovecot-imapd >/dev/null; }
fi
mkdir -p "$d/run" "$d/state"
echo "$port" > "$d/port"
# mail homes live where the unprivileged dovecot user can reach them (test temp dirs are often 0700)
mail=$(mktemp -d /tmp/sb-dovecot-mail.XXXXXX); chmod 755 "$mail"; chown dovecot:dovecot "$mail"; echo "$mail" > "$d/maildir.path"
touch "$mail/users"; chmod 644 "$mail/users"
cat > "$d/dovecot.conf" <<CONF
base_dir = $d/run
state_dir = $d/state
log_path = $d/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:~/Maildir
first_valid_uid = 1
# IDLE clients hear about changes made by other sessions within a second.
mailbox_idle_check_interval = 1 secs
# Throw-away mail: no fsync per message (APPEND of thousands of test messages).
mail_fsync = never
mail_plugins = \$mail_plugins
protocol imap {
  mail_max_userip_connections = 100
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $port
  }
  inet_listener imaps {
    port = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $mail/users
}
userdb {
  driver = static
  args = uid=dovecot gid=dovecot home=$mail/%u
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
  mailbox Drafts {
    special_use = \\Drafts
    auto = subscribe
  }
  mailbox Trash {
    special_use = \\Trash
    auto = subscribe
  }
  mailbox Junk {
    special_use = \\Junk
    auto = subscribe
  }
  mailbox Archive {
    special_use = \\Archive
    auto = subscribe
  }
}
CONF
dovecot -c "$d/dovecot.conf" </dev/null >/dev/null 2>&1
for _ in $(seq 50); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && { echo "DOVECOT_PORT=$port"; echo "DOVECOT_DIR=$d"; exit 0; }
  sleep 0.1
done
echo "dovecot did not listen on $port" >&2; cat "$d/dovecot.log" >&2 || true; exit 1
