// Example secrets of every kind the redactor must catch, each inside the text a user would write.
// All are made up (random-looking, right shape); `secret` is what must never be stored or exported.

export interface SecretCase { kind: string; text: string; secret: string }

export const SECRET_CASES: SecretCase[] = [
  { kind: 'AWS access key id', text: 'my key id is AKIAIOSFODNN7EXAMPLE thanks', secret: 'AKIAIOSFODNN7EXAMPLE' },
  { kind: 'AWS secret access key', text: 'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
  { kind: 'short password (key=value)', text: 'login with password=hunter2 please', secret: 'hunter2' },
  { kind: 'password in prose', text: 'The password is Tr0ub4dor and do not share it', secret: 'Tr0ub4dor' },
  { kind: 'password inside JSON', text: 'config: {"password": "JsonHiddenPass123456", "user": "bob"}', secret: 'JsonHiddenPass123456' },
  { kind: 'password inside JSON with escaped quotes', text: 'the string is "{\\"password\\": \\"EscapedPw98765\\"}" ok', secret: 'EscapedPw98765' },
  { kind: 'OpenAI project key', text: 'use sk-proj-AbCdEfGh1234567890IjKl for it', secret: 'sk-proj-AbCdEfGh1234567890IjKl' },
  { kind: 'OpenAI legacy key', text: 'OPENAI_API_KEY sk-9fXq2LmZ7rT4vB8nW1cY5hJ3kP0sD6aE', secret: 'sk-9fXq2LmZ7rT4vB8nW1cY5hJ3kP0sD6aE' },
  { kind: 'Anthropic key', text: 'claude key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf', secret: 'sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf' },
  { kind: 'Hugging Face token', text: 'HF token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567', secret: 'hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567' },
  { kind: 'Google API key', text: 'maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q', secret: 'AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q' },
  { kind: 'PEM private key', text: 'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7pemSecretBodyLine1\nQ2xhd2RlIHNlY3JldCBrZXk=\n-----END RSA PRIVATE KEY-----\nend', secret: 'MIIEpAIBAAKCAQEA7pemSecretBodyLine1' },
  { kind: 'OpenSSH private key', text: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----', secret: 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmU' },
  { kind: 'user:pass@ URL', text: 'connect to postgres://admin:S3cretDbPass@db.example.com:5432/app', secret: 'S3cretDbPass' },
  { kind: 'GitHub classic token', text: 'push with ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R', secret: 'ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R' },
  { kind: 'GitHub fine-grained token', text: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF', secret: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF' },
  { kind: 'GitLab token', text: 'glpat-Xy7Zq3Wr9Tv5Ub1Sn2Mk', secret: 'glpat-Xy7Zq3Wr9Tv5Ub1Sn2Mk' },
  { kind: 'Slack bot token', text: 'slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx', secret: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx' },
  { kind: 'Slack webhook', text: 'post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX', secret: 'T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX' },
  { kind: 'Stripe live key', text: 'stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc', secret: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc' },
  { kind: 'JWT', text: 'session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', secret: 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' },
  { kind: 'bearer token', text: 'Authorization: Bearer abcDEF123456ghiJKL789mnoPQR', secret: 'abcDEF123456ghiJKL789mnoPQR' },
  { kind: 'basic auth header', text: 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l', secret: 'YWxhZGRpbjpvcGVuc2VzYW1l' },
  { kind: 'npm token', text: 'npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 in .npmrc', secret: 'npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789' },
  { kind: 'PyPI token', text: 'pypi-AgEIcHlwaS5vcmcCJGUxMjM0NTY3LWFiY2QtZWZnaC1pamtsLW1ub3BxcnN0dXZ3', secret: 'pypi-AgEIcHlwaS5vcmcCJGUxMjM0NTY3LWFiY2QtZWZnaC1pamtsLW1ub3BxcnN0dXZ3' },
  { kind: 'SendGrid key', text: 'SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01', secret: 'SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01' },
  { kind: 'Twilio key', text: 'twilio SK0123456789abcdef0123456789abcdef', secret: 'SK0123456789abcdef0123456789abcdef' },
  { kind: 'Telegram bot token', text: 'bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1', secret: 'AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1' },
  { kind: 'Google OAuth client secret', text: 'client secret GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12', secret: 'GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12' },
  { kind: 'DigitalOcean token', text: 'dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', secret: 'dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' },
  { kind: 'Azure storage key', text: 'DefaultEndpointsProtocol=https;AccountName=x;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core', secret: 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA' },
  { kind: 'API key in YAML', text: 'api_key: 7f3c9a1b2d4e', secret: '7f3c9a1b2d4e' },
  { kind: 'long random token (entropy)', text: 'the code is Qm9X4tLr8ZpV2nW7sK3yH6jD1cF5gB0a right', secret: 'Qm9X4tLr8ZpV2nW7sK3yH6jD1cF5gB0a' },
  { kind: 'long hex secret (entropy)', text: 'webhook secret 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c', secret: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c' },
];

/** Ordinary text the redactor must leave alone. */
export const ORDINARY = [
  'Once upon a time, a dog named Max ran to the park.',
  'the sky-blue kite-flying day',
  'Run npm install, then open /usr/local/lib/node_modules/openclaw-rl/README.md',
  'request id 123e4567-e89b-12d3-a456-426614174000 failed',
  'The function getUserName returns a string.',
  'I forgot which token limit applies here',
  'antidisestablishmentarianism is a long word',
];
