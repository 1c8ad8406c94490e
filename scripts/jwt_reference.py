"""Reads or makes an HS256 JWT with PyJWT, the reference JWT library, so
the API keys' tokens (built by hand in services/src/auth/api_key.rs) are
checked against it both ways (used by refctl's auth tests).

    jwt_reference.py decode SECRET TOKEN           -> {"header": ..., "claims": ...}; exit 1 if invalid
    jwt_reference.py encode SECRET ALG KID|-       < claims JSON -> token
"""

import json
import sys

import jwt


def decode(secret, token):
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], options={"verify_exp": False})
    except jwt.InvalidTokenError as e:
        print(f"invalid: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"header": jwt.get_unverified_header(token), "claims": claims}))
    return 0


def encode(secret, alg, kid):
    claims = json.load(sys.stdin)
    headers = {"kid": kid} if kid != "-" else None
    print(jwt.encode(claims, secret, algorithm=alg, headers=headers))
    return 0


def main(argv):
    if len(argv) == 3 and argv[0] == "decode":
        return decode(argv[1], argv[2])
    if len(argv) == 4 and argv[0] == "encode":
        return encode(argv[1], argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
