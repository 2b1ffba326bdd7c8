// The engine's settings (`host.get-settings`) from the Worker's environment: the same
// variables `esign serve` reads. The policy members are WIT options: a variable unset
// (or empty) passes none, and the engine's default applies (engine/src/base/policy.rs).

const num = (env, name) => (env[name] === undefined || env[name] === '' ? undefined : Number(env[name]));
const big = (env, name) => (num(env, name) === undefined ? undefined : BigInt(num(env, name)));

export function settings(env, baseUrl, signingCertificate, linkKey) {
  return {
    tokenTtlSecs: big(env, 'ESIGN_TOKEN_TTL_SECS'),
    loginMaxFailures: num(env, 'ESIGN_LOGIN_MAX_FAILURES'),
    loginLockSecs: big(env, 'ESIGN_LOGIN_LOCK_SECS'),
    tokenMinIntervalMs: big(env, 'ESIGN_TOKEN_MIN_INTERVAL_MS'),
    baseUrl,
    canConvertWord: false,
    blobResponses: false,
    uploadTtlSecs: big(env, 'ESIGN_UPLOAD_TTL_SECS'),
    eidProvider: '',
    signingCertificate,
    oauthAccessTtlSecs: big(env, 'ESIGN_OAUTH_ACCESS_TTL_SECS'),
    completionAttachmentMaxBytes: big(env, 'ESIGN_COMPLETION_ATTACHMENT_MAX_BYTES'),
    completionLinkDays: big(env, 'ESIGN_COMPLETION_LINK_DAYS'),
    mcpTestUser: env.ESIGN_TEST_MCP_USER ?? '',
    linkKey,
  };
}
