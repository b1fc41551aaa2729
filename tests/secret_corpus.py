"""A corpus of synthetic secrets in their providers' real shapes, for the masker's tests.

Built from parts, so no scanner mistakes this file for a leak. ``secret_core`` is the part of
each that must never survive masking (a label such as ``sig=`` may stay readable).
"""

from __future__ import annotations

__all__ = ["CORPUS", "URLS", "secret_core"]

A = "a1B2c3D4e5F6g7H8i9J0"  # 20 mixed characters
HEX = "0123456789abcdef"

CORPUS: list[tuple[str, str]] = [
    ("OpenAI", "sk-" + "proj-" + A + A),
    ("OpenAI service account", "sk-" + "svcacct-" + A + A),
    ("Anthropic", "sk-" + "ant-api03-" + A + A + "-" + A),
    ("Google API key", "AI" + "za" + "Sy" + A + "xyz_-123456"),
    ("Google OAuth access token", "ya" + "29." + A + A),
    ("Google OAuth client secret", "GOC" + "SPX-" + A + "abcd"),
    ("AWS access key id", "AK" + "IA" + "IOSFODNN7EXAMPLE"),
    ("AWS temporary key id", "AS" + "IA" + "IOSFODNN7EXAMPLE"),
    ("Azure SAS signature", "sig" + "=" + "q9Z%2Bk3" + A + "%3D"),
    ("Azure storage key", "Account" + "Key=" + A + "+/" + A + "=="),
    ("Azure bus key", "SharedAccess" + "Key=" + A + A),
    ("GitHub classic", "gh" + "p_" + A + A[:16]),
    ("GitHub OAuth", "gh" + "o_" + A + A[:16]),
    ("GitHub fine-grained", "github" + "_pat_" + "11ABC" + A + "_" + A + A),
    ("GitLab personal", "gl" + "pat-" + A),
    ("GitLab deploy", "gl" + "dt-" + A),
    ("Hugging Face", "hf" + "_" + A + A[:14]),
    ("Stripe secret", "sk" + "_live_" + A + A),
    ("Stripe restricted", "rk" + "_live_" + A + A),
    ("Stripe test", "sk" + "_test_" + A),
    ("Slack bot", "xo" + "xb-" + "1234567890-" + A),
    ("Slack app", "xa" + "pp-" + "1-A0123-" + A),
    ("Slack webhook", "https://hooks.slack.com/services/" + "T0123ABCD/B0123ABCD/" + A),
    ("npm", "np" + "m_" + A + A[:16]),
    ("Groq", "gs" + "k_" + A + A + A[:12]),
    ("SendGrid", "SG" + "." + A + "ab" + "." + A + A + "abc"),
    ("DigitalOcean", "do" + "p_v1_" + HEX * 4),
    ("Databricks", "da" + "pi" + HEX * 2),
    ("JWT", "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxIn0" + "." + A),
    ("Bearer header", "Bearer " + A + A),
    ("RSA private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + A + "\n"
                        "-----END RSA PRIVATE KEY-----"),
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn" + A + "\n"
                            "-----END OPENSSH PRIVATE KEY-----"),
    ("PGP private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF" + A + "\n=Ab12\n"
                        "-----END PGP PRIVATE KEY BLOCK-----"),
]
"""(provider, secret) — the table in docs/integrity-hostile.md ("Secret shapes")."""

def secret_core(secret: str) -> str:
    for label in ("sig=", "AccountKey=", "SharedAccessKey=", "Bearer ",
                  "https://hooks.slack.com/services/"):
        secret = secret.removeprefix(label)
    return secret[-16:] if "PRIVATE KEY" not in secret else A


URLS = [
    ("https://user:p@ss@word@db.example.com/x", "p@ss@word"),
    ("postgresql://app:s3cr3t-pass@127.0.0.1:5432/judge", "s3cr3t-pass"),
    ("https://" + A + "@github.com/org/repo.git", A),
    ("https://x.blob.core.windows.net/c?sv=2022-11-02&se=2026&sig=" + A + "%3D", A),
]
