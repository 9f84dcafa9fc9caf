// The store's schema, as an ordered list of migrations. `user_version` records how many have run;
// each runs once, inside a transaction, so a store is always at a known version.

export const MIGRATIONS: string[] = [
  // 1: sessions and turns
  `CREATE TABLE sessions (
     id TEXT PRIMARY KEY,
     id_source TEXT NOT NULL,              -- which signal named the session (header, affinity, …)
     created_at INTEGER NOT NULL,
     last_seen_at INTEGER NOT NULL,
     ended_at INTEGER,
     end_reason TEXT                       -- done | idle | shutdown
   );
   CREATE TABLE turns (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     session_id TEXT NOT NULL REFERENCES sessions(id),
     idx INTEGER NOT NULL,                 -- 0, 1, … among the session's main turns
     turn_type TEXT NOT NULL,              -- main | side
     type_source TEXT NOT NULL,
     status TEXT NOT NULL,                 -- complete | aborted | error
     request_json TEXT NOT NULL,           -- the request's messages, tools and sampling settings
     prompt_ids TEXT NOT NULL,             -- JSON arrays of the exact ids
     response_ids TEXT NOT NULL,
     response_logprobs TEXT NOT NULL,
     response_text TEXT NOT NULL,
     answer_json TEXT,                     -- the assistant message as the client got it (content, tool calls)
     finish_reason TEXT NOT NULL,
     policy_version INTEGER NOT NULL,
     prompt_tokens INTEGER NOT NULL,
     completion_tokens INTEGER NOT NULL,
     queued_ms REAL, first_token_ms REAL, total_ms REAL,
     next_state_json TEXT,                 -- the messages that followed this turn's answer
     next_state_status TEXT NOT NULL,      -- pending | paired | unpaired | none
     next_state_reason TEXT,
     created_at INTEGER NOT NULL
   );
   CREATE INDEX turns_by_session ON turns(session_id, idx);
   CREATE INDEX turns_by_time ON turns(created_at);`,
  // 2: judgements of paired turns (votes kept raw); deferred ones wait for their next attempt
  `CREATE TABLE judgements (
     turn_id INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
     status TEXT NOT NULL,                 -- done | deferred
     score INTEGER,                        -- majority of the PRM votes (or a rule's verdict, migration 5): -1, 0, 1
     hint TEXT,                            -- the chosen hindsight hint, if any
     votes_json TEXT NOT NULL,
     backend TEXT NOT NULL,
     attempts INTEGER NOT NULL,
     next_attempt_at INTEGER,
     last_error TEXT,
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX judgements_by_status ON judgements(status, next_attempt_at);`,
  // 3: training samples (the durable queue), optimizer steps, and the weights versions they made
  `CREATE TABLE samples (
     turn_id INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
     method TEXT NOT NULL,
     kind TEXT NOT NULL,                   -- binary | opd | combine | neutral (at-least-one) | none
     reward REAL,
     hint TEXT,
     advantages TEXT NOT NULL,             -- JSON per response token
     loss_mask TEXT NOT NULL,
     teacher_logprobs TEXT,
     behaviour_version INTEGER NOT NULL,
     temperature REAL NOT NULL,
     status TEXT NOT NULL,                 -- pending | trained | stale | rejected | none (no signal)
     step INTEGER,
     reason TEXT,
     created_at INTEGER NOT NULL
   );
   CREATE INDEX samples_by_status ON samples(status, turn_id);
   CREATE TABLE training_steps (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     step INTEGER,                         -- the optimizer step it made (published steps only)
     status TEXT NOT NULL,                 -- published | rejected | lost (after a crash, before its checkpoint)
     version INTEGER,
     samples INTEGER NOT NULL, tokens INTEGER NOT NULL,
     loss REAL, reward_mean REAL, clip_fraction REAL, mean_ratio REAL, kl REAL, teacher_gap REAL, grad_norm REAL,
     staleness_mean REAL, duration_ms REAL, reason TEXT, created_at INTEGER NOT NULL
   );`,
  // 4: every weights version ever served, written before it is published: the durable counter that
  // keeps version numbers unique and increasing across crashes and restarts
  `CREATE TABLE weights_versions (
     version INTEGER PRIMARY KEY,
     step INTEGER,                         -- the optimizer step whose weights it holds (0: a fresh adapter)
     source TEXT NOT NULL,                 -- step | resume | rollback | fresh
     created_at INTEGER NOT NULL
   );`,
  // 5: the rule over the votes that gave a judgement's score, when not the PRM majority (judge/judge.ts)
  `ALTER TABLE judgements ADD COLUMN rule TEXT;`,
  // 6: the likelihood guard's calibration (learn/likelihood-guard.ts): the base's own answers' mean log-likelihood per
  // token, one a judged request, so that a restart keeps the floor rather than sampling the base again
  `CREATE TABLE likelihood_calibration (
     turn_id INTEGER PRIMARY KEY,          -- the judged turn whose request the base answered
     base_mean REAL NOT NULL,              -- nats per token
     created_at INTEGER NOT NULL
   );`,
];
