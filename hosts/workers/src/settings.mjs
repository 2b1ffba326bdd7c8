// The engine's settings (`host.get-settings`) from the Worker's environment: the same
// variables `esign serve` reads, with its defaults (host/src/runtime/mod.rs).

const num = (env, name, fallback) => (env[name] === undefined || env[name] === '' ? fallback : Number(env[name]));

export function settings(env, baseUrl, signingCertificate, linkKey) {
  return {
    tokenTtlSecs: BigInt(num(env, 'ESIGN_TOKEN_TTL_SECS', 5_184_000)),
    loginMaxFailures: num(env, 'ESIGN_LOGIN_MAX_FAILURES', 5),
    loginLockSecs: BigInt(num(env, 'ESIGN_LOGIN_LOCK_SECS', 900)),
    tokenMinIntervalMs: BigInt(num(env, 'ESIGN_TOKEN_MIN_INTERVAL_MS', 1000)),
    baseUrl,
    canConvertWord: false,
    uploadTtlSecs: BigInt(num(env, 'ESIGN_UPLOAD_TTL_SECS', 48 * 3600)),
    eidProvider: '',
    signingCertificate,
    oauthAccessTtlSecs: BigInt(num(env, 'ESIGN_OAUTH_ACCESS_TTL_SECS', 3600)),
    mcpTestUser: env.ESIGN_TEST_MCP_USER ?? '',
    linkKey,
  };
}
