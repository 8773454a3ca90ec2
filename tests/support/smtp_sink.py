#!/usr/bin/env python3
"""A real SMTP server for the integration tests (aiosmtpd).

usage: smtp_sink.py PORT MAILDIR

Accepts every message on 127.0.0.1:PORT and writes each one, as received, to
MAILDIR/<n>.eml. Prints "ready" once listening. Exits when its stdin closes, so it
never outlives the test process that started it.

For the e-mail tests it also offers AUTH PLAIN/LOGIN without TLS (loopback only): any
login is accepted except the password "wrong-smtp-password", and recipients whose
address starts with "reject" are refused with 550, like a real server would.
"""
import itertools
import os
import sys
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

# aiosmtpd deprecates a field it sets itself after AUTH; nothing to act on here.
warnings.filterwarnings("ignore", message="Session.login_data")

counter = itertools.count()


class Sink:
    def __init__(self, maildir):
        self.maildir = maildir

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().startswith("reject"):
            return "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        n = next(counter)
        tmp = os.path.join(self.maildir, ".%d.tmp" % n)
        with open(tmp, "wb") as f:
            f.write(b"X-Rcpt-To: " + ",".join(envelope.rcpt_tos).encode() + b"\r\n")
            f.write(envelope.original_content or envelope.content)
        os.rename(tmp, os.path.join(self.maildir, "%d.eml" % n))
        return "250 Message accepted for delivery"


def authenticate(server, session, envelope, mechanism, auth_data):
    password = getattr(auth_data, "password", b"") or b""
    # handled=False: aiosmtpd answers 235 or 535 itself.
    return AuthResult(success=password != b"wrong-smtp-password", handled=False)


def main():
    port, maildir = int(sys.argv[1]), sys.argv[2]
    os.makedirs(maildir, exist_ok=True)
    controller = Controller(
        Sink(maildir),
        hostname="127.0.0.1",
        port=port,
        authenticator=authenticate,
        auth_require_tls=False,
    )
    controller.start()
    print("ready", flush=True)
    try:
        sys.stdin.read()  # returns at EOF: the parent is gone
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
