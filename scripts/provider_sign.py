"""Signs or verifies a payment provider's webhook body with the provider's
official Python library, so the connector's own signature code is checked
against theirs (used by the connector tests and `make run`'s sample event).

    provider_sign.py sign   stripe|paddle SECRET [TIMESTAMP]  < body  -> header
    provider_sign.py verify stripe|paddle SECRET HEADER       < body  -> exit 0 if valid

`verify` checks the timestamp too (300 s for both libraries' defaults).
"""

import sys
import time
from types import SimpleNamespace


def stripe_sign(body, secret, ts):
    from stripe import WebhookSignature

    return WebhookSignature.generate_signature_header(body, secret, timestamp=ts)


def stripe_verify(body, secret, header):
    import stripe
    from stripe import WebhookSignature

    try:
        WebhookSignature.verify_header(body, header, secret, tolerance=300)
    except stripe.SignatureVerificationError:
        return False
    return True


def paddle_sign(body, secret, ts):
    from paddle_billing.Notifications import PaddleSignature

    digest = PaddleSignature.calculate_hmac(secret, f"{ts}:{body}".encode()).hexdigest()
    return f"ts={ts};h1={digest}"


def paddle_verify(body, secret, header):
    from paddle_billing.Notifications import Secret, Verifier

    request = SimpleNamespace(headers={"Paddle-Signature": header}, body=body.encode())
    try:
        return bool(Verifier().verify(request, Secret(secret)))
    except ConnectionRefusedError:
        return False


def main():
    op, provider, secret = sys.argv[1], sys.argv[2], sys.argv[3]
    body = sys.stdin.buffer.read().decode("utf-8")
    if op == "sign":
        ts = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
        sign = {"stripe": stripe_sign, "paddle": paddle_sign}[provider]
        print(sign(body, secret, ts))
        return 0
    verify = {"stripe": stripe_verify, "paddle": paddle_verify}[provider]
    return 0 if verify(body, secret, sys.argv[4]) else 1


if __name__ == "__main__":
    sys.exit(main())
