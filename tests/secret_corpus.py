"""A corpus of synthetic secrets in their providers' real shapes, for the masker's tests.

Built from parts, so no scanner mistakes this file for a leak. ``secret_core`` is the part of
each that must never survive masking (a label such as ``sig=`` may stay readable).
"""

from __future__ import annotations

__all__ = ["CONFIGURED", "CORPUS", "PROSE", "PROSE_KEPT", "URLS", "secret_core"]

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


V = "q7Zr2Lx9" + "Wm4Kp8Nt" + "3Bv6Hc1J"  # a credential of no known format: found by its context
B64 = "dXNlcjpw" + "YXNzd29yZA=="  # base64 of user:password (no digit)
ZWSP, ZWJ = "\u200b", "\u200d"

PROSE: list[tuple[str, str, str]] = [
    ("Authorization: Bearer", f"the request carried Authorization: Bearer {V} as sent", V),
    ("lower-case authorization: bearer", f"authorization: bearer {V}", V),
    ("Authorization: Basic (base64, no digit)", f"Authorization: Basic {B64}", B64),
    ("Authorization: token (GitHub style)", f"Authorization: token {V}", V),
    ("curl -H 'Authorization: Bearer …'", f"curl -H 'Authorization: Bearer {V}' https://api.x", V),
    ("a bare Bearer token in a log line", f"12:00:01 retry with Bearer {V} (attempt 2)", V),
    ("api_key=… in a sentence", f"set api_key={V} before the call", V),
    ("API_KEY: … (YAML, .env)", f"API_KEY: {V}", V),
    ("export OPENAI_API_KEY=…", f"$ export OPENAI_API_KEY={V}", V),
    ('"api_key": "…" (JSON in text)', f'config was {{"api_key": "{V}", "retries": 3}}', V),
    ('{\\"api_key\\": \\"…\\"} (escaped JSON)', f'body: "{{\\"api_key\\": \\"{V}\\"}}"', V),
    ("client_secret = '…' (Python)", f"client_secret = '{V}'", V),
    ("x-api-key: … (a header)", f"x-api-key: {V}", V),
    ("a provider key split by a zero-width space",
     "key " + "sk-" + "proj-" + V[:12] + ZWSP + V[12:] + V + " leaked", V[12:] + V),
    ("a key's name split by a zero-width joiner", f"api{ZWJ}_key={V}", V),
]
"""(shape, text, the part that must never survive) — prose a suite's text may hold: masked
at load with the suite's own shapes (``formats_only``), the table in docs/integrity-hostile.md
("Secrets in prose")."""

CONFIGURED = {"OPENAI_API_KEY": "team" + "-key-" + "7f3a9c1e5b2d4f60a8",
              "JUDGE_CACHE_SECRET": "cache" + "secret" + "-9e8d7c6b5a"}
"""Credentials of no known shape, held in the environment: masked by their values."""

PROSE_KEPT = [
    "Testing token: curl", "max_tokens=1024", "Created token deploy-ci-2025-03",
    "Authorization: administrator", "password: changeme", "the bearer of bad news",
    '"promptTokens": 123456789', "token: null", '"secret": false', "api_key=1024",
    "a secret recipe", "the token count was 12", "Bearer tokens are described in RFC 6750",
]
"""Prose about credentials that holds none: left as it is by the suite's shapes."""
