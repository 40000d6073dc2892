"""Who sends a request, as kube-apiserver's authentication and impersonation filters decide it.

- No ``Authorization`` header, or kubesim's own kubeconfig token: the cluster admin (``kubernetes-admin``,
  groups ``system:masters`` and ``system:authenticated``), so plain clients and kubectl keep full access.
- ``Authorization: Bearer <token>`` with a service-account token (from the TokenRequest subresource or a
  ``kubernetes.io/service-account-token`` Secret): ``system:serviceaccount:<ns>:<name>``, groups
  ``system:serviceaccounts``, ``system:serviceaccounts:<ns>``, ``system:authenticated``. The account must
  still exist with the uid the token names (and a legacy token's Secret must still hold it); any other
  credential is 401 Unauthorized.
- ``Impersonate-User`` / ``-Group`` / ``-Uid`` / ``-Extra-<key>``: the request acts as that user, once the
  authoriser lets the requester ``impersonate`` each of them.

Tokens are JWTs signed (HS256) with a key of this emulator, carrying the claims kube-apiserver's carry.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

import orjson

from kubesim import errors
from kubesim.rbac import Attributes
from kubesim.resources import BY_PLURAL
from kubesim.store import Store

SERVICE_ACCOUNT = BY_PLURAL["serviceaccounts"]
SECRET = BY_PLURAL["secrets"]
AUTHENTICATED = "system:authenticated"
SA_PREFIX = "system:serviceaccount:"
ISSUER = AUDIENCE = "https://kubernetes.default.svc.cluster.local"  # kube-apiserver's default --api-audiences
LEGACY_ISSUER = "kubernetes/serviceaccount"
LEGACY_CLAIM = "kubernetes.io/serviceaccount/"  # the prefix of a legacy token's claims
ADMIN_TOKEN = "kubesim"  # the token of the kubeconfig kubesim writes
_ADMIN_HEADER = f"Bearer {ADMIN_TOKEN}"
TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
MIN_EXPIRATION, DEFAULT_EXPIRATION, MAX_EXPIRATION = 600, 3600, 2**32
_HEADER = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def user_info(self) -> dict:
        """authentication.k8s.io/v1 UserInfo, as an AdmissionReview's ``userInfo`` carries it."""
        info: dict = {"username": self.name}
        if self.uid:
            info["uid"] = self.uid
        info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {key: list(values) for key, values in self.extra}
        return info


ADMIN = User("kubernetes-admin", ("system:masters", AUTHENTICATED))


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    return User(f"{SA_PREFIX}{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED), uid)


def split_service_account(username: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of a service account's user name, else None."""
    if not username.startswith(SA_PREFIX):
        return None
    namespace, colon, name = username[len(SA_PREFIX):].partition(":")
    return (namespace, name) if colon and namespace and name and ":" not in name else None


def unauthorized() -> errors.ApiError:
    return errors.ApiError(401, "Unauthorized", "Unauthorized")


class Tokens:
    """Service-account tokens: issued here and checked against the store when presented."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._key = secrets.token_bytes(32)

    def _sign(self, claims: dict) -> str:
        payload = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=")
        signature = hmac.new(self._key, _HEADER + b"." + payload, hashlib.sha256).digest()
        return b".".join((_HEADER, payload, base64.urlsafe_b64encode(signature).rstrip(b"="))).decode()

    def request(self, namespace: str, name: str, body: dict) -> dict:
        """The answer to a TokenRequest (``serviceaccounts/<name>/token``) for an existing account."""
        account = self._store.get(SERVICE_ACCOUNT, namespace, name)
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        audiences = spec.get("audiences") or [AUDIENCE]
        seconds = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise errors.bad_request("spec.audiences must be a list of strings")
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise errors.bad_request("spec.expirationSeconds must be an integer")
        if not MIN_EXPIRATION <= seconds <= MAX_EXPIRATION:
            bound = "less than 10 minutes" if seconds < MIN_EXPIRATION else "larger than 2^32 seconds"
            raise errors.ApiError(422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
                                  f"spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration "
                                  f"{bound}", {"name": name, "group": "authentication.k8s.io", "kind": "TokenRequest"})
        if spec.get("boundObjectRef"):  # would bind the token's life to a pod or secret: not played
            raise errors.bad_request("kubesim issues no tokens bound to an object (spec.boundObjectRef)")
        now = int(time.time())
        token = self._sign({"aud": audiences, "exp": now + seconds, "iat": now, "nbf": now, "iss": ISSUER,
                            "jti": str(uuid.uuid4()), "sub": f"{SA_PREFIX}{namespace}:{name}",
                            "kubernetes.io": {"namespace": namespace, "serviceaccount": {
                                "name": name, "uid": account["metadata"]["uid"]}}})
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + seconds))
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": None},
                "status": {"token": token, "expirationTimestamp": expires}}

    def legacy(self, namespace: str, name: str, uid: str, secret: str) -> str:
        """The never-expiring token the tokens controller writes into a service-account-token Secret."""
        claim = LEGACY_CLAIM
        return self._sign({"iss": LEGACY_ISSUER, f"{claim}namespace": namespace,
                           f"{claim}secret.name": secret, f"{claim}service-account.name": name,
                           f"{claim}service-account.uid": uid, "sub": f"{SA_PREFIX}{namespace}:{name}"})

    def user(self, token: str) -> User | None:
        """The service account a token authenticates, or None (forged, expired, or its account gone)."""
        claims = self._claims(token)
        if claims is None:
            return None
        claim = LEGACY_CLAIM
        if claims.get("iss") == LEGACY_ISSUER:
            namespace, name = claims.get(f"{claim}namespace"), claims.get(f"{claim}service-account.name")
            uid, secret_name = claims.get(f"{claim}service-account.uid"), claims.get(f"{claim}secret.name")
            secret = self._store.find(SECRET, namespace, secret_name)
            stored = ((secret or {}).get("data") or {}).get("token")
            try:
                if not isinstance(stored, str) or base64.b64decode(stored) != token.encode():
                    return None
            except ValueError:  # the Secret's data was rewritten with something that is not base64
                return None
        else:
            scope = claims.get("kubernetes.io") or {}
            account = scope.get("serviceaccount") or {}
            namespace, name, uid = scope.get("namespace"), account.get("name"), account.get("uid")
            audiences = claims.get("aud") or []
            if not isinstance(claims.get("exp"), int) or claims["exp"] <= time.time() or AUDIENCE not in audiences:
                return None
        stored_account = self._store.find(SERVICE_ACCOUNT, namespace, name)
        if stored_account is None or stored_account["metadata"]["uid"] != uid:
            return None
        return service_account_user(namespace, name, uid)

    def _claims(self, token: str) -> dict | None:
        parts = token.encode().split(b".")
        if len(parts) != 3 or parts[0] != _HEADER:
            return None
        expected = hmac.new(self._key, parts[0] + b"." + parts[1], hashlib.sha256).digest()
        try:
            signature = base64.urlsafe_b64decode(parts[2] + b"=" * (-len(parts[2]) % 4))
            if not hmac.compare_digest(signature, expected):
                return None
            claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + b"=" * (-len(parts[1]) % 4)))
        except ValueError:
            return None
        return claims if isinstance(claims, dict) else None


def authenticate(authorization: str | None, tokens: Tokens) -> User:
    """The user an ``Authorization`` header names (none: the admin); 401 for anything unknown."""
    if authorization is None or authorization == _ADMIN_HEADER:  # most requests: no parsing
        return ADMIN
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise unauthorized()
    if token == ADMIN_TOKEN:
        return ADMIN
    user = tokens.user(token)
    if user is None:
        raise unauthorized()
    return user


def impersonate(requester: User, headers: dict[str, list[str]], allowed: Callable[[User, Attributes], bool],
                uri: str) -> User:
    """``requester``, or the user the ``Impersonate-*`` headers (lower-cased name: all values) ask to act
    as, each part of it authorised by the ``impersonate`` verb (403 otherwise)."""
    name = (headers.get("impersonate-user") or [""])[0]
    groups = headers.get("impersonate-group") or []
    uid = (headers.get("impersonate-uid") or [""])[0]
    extra_prefix = "impersonate-extra-"
    extra = [(unquote(header[len(extra_prefix):]), values) for header, values in headers.items()
             if header.startswith(extra_prefix)]
    if not name:
        if groups or uid or extra:  # kube-apiserver answers this with an internal error
            raise errors.ApiError(500, "InternalError", f'Internal Server Error: "{uri}": requested impersonation '
                                  "of groups, uid or extra without impersonating a user")
        return requester
    account = split_service_account(name)
    wanted = [Attributes("impersonate", "", "serviceaccounts", "", account[0], account[1]) if account
              else Attributes("impersonate", "", "users", "", "", name)]
    wanted += [Attributes("impersonate", "", "groups", "", "", group) for group in groups]
    if uid:
        wanted.append(Attributes("impersonate", "authentication.k8s.io", "uids", "", "", uid))
    wanted += [Attributes("impersonate", "authentication.k8s.io", "userextras", key, "", value)
               for key, values in extra for value in values]
    for attributes in wanted:
        if not allowed(requester, attributes):
            raise attributes.forbidden(requester)
    if not groups:
        groups = list(service_account_user(*account).groups[:2]) if account else []
        if name != "system:anonymous" and AUTHENTICATED not in groups and "system:unauthenticated" not in groups:
            groups.append(AUTHENTICATED)
    return User(name, tuple(groups), uid, tuple((key, tuple(values)) for key, values in extra))
