// The names of the agent environments, apart from their code so the CLI can list them without loading any.
export const ENV_NAMES = ['toolcall', 'terminal', 'swe', 'gui'] as const;
export type EnvName = (typeof ENV_NAMES)[number];

/** Environments whose episodes run in the bubblewrap sandbox (the tool-call env only for its python tool). */
export const SANDBOXED_ENVS: readonly string[] = ['terminal', 'swe'];
