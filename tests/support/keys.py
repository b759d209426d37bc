"""A GitHub App private key for tests, made once per test session (RSA key generation is slow)."""

from __future__ import annotations

import functools

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@functools.cache
def app_private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.cache
def app_key() -> str:
    """The PEM text, as `BATON_PRIVATE_KEY` holds it."""
    return (
        app_private_key()
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        .decode()
    )


@functools.cache
def app_public_key() -> str:
    """The public half as PEM, as GitHub (or the stand-in) holds it to verify the App's JWTs."""
    return (
        app_private_key()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
