// banditd.d.ts — the types of banditd.js. Each interface tagged @schema
// mirrors the schema of that name in docs/openapi.json, field for field,
// optional exactly where the schema does not require the field:
// test/openapi.test.mjs checks it.

/** @schema AssignmentRequest */
export interface AssignmentRequest {
  bandit?: string | null;
  unit?: string | null;
  count?: number;
}

/** @schema Assignment */
export interface Assignment {
  id: string;
  bandit: string;
  arm: string;
  arm_index: number;
  /** RFC 3339, UTC */
  expires_at: string;
  /** true after the experiment stopped: the recommended arm, not a pull */
  exploit: boolean;
}

/** @schema AssignmentResponse */
export interface AssignmentResponse {
  assignments: Assignment[];
}

/** @schema RewardItem */
export interface RewardItem {
  assignment_id: string;
  reward: number;
}

export type RewardStatus = 'accepted' | 'duplicate' | 'conflict' | 'unknown' | 'expired' | 'error';

/** @schema RewardResult */
export interface RewardResult {
  assignment_id: string;
  status: RewardStatus;
}

/** @schema RewardResponse */
export interface RewardResponse {
  accepted: number;
  duplicates: number;
  results: RewardResult[];
}

export type ReleaseStatus = 'released' | 'duplicate' | 'rewarded' | 'expired' | 'unknown' | 'error';

/** @schema ReleaseResult */
export interface ReleaseResult {
  assignment_id: string;
  status: ReleaseStatus;
}

/** @schema ReleaseResponse */
export interface ReleaseResponse {
  released: number;
  duplicates: number;
  results: ReleaseResult[];
}

export type ServedStatus = 'bound' | 'duplicate' | 'conflict' | 'unknown' | 'error';

/** @schema ServedResult */
export interface ServedResult {
  assignment_id: string;
  status: ServedStatus;
}

/** @schema ServedResponse */
export interface ServedResponse {
  bound: number;
  duplicates: number;
  results: ServedResult[];
}

/** @schema ArmStatus */
export interface ArmStatus {
  id: string;
  pulls: number;
  pending: number;
  mean: number | null;
  variance: number | null;
  lower: number;
  upper: number;
  posterior_mean?: number;
  retired?: boolean;
  /** goal type control: this arm is the control */
  control?: boolean;
  /** goal type control, every other arm: its comparison with the control */
  vs_control?: VsControl;
}

/** @schema VsControl (ArmStatus.vs_control) */
export interface VsControl {
  difference: number | null;
  lower: number;
  upper: number;
  decision: 'open' | 'superior' | 'futile';
  decided_at: number | null;
}

/** @schema StopEval */
export interface StopEval {
  rule: string;
  proven: boolean;
  fires_when: string | null;
  evidence: number | null;
  threshold: number | null;
  error_bound: number | null;
  fired: boolean;
}

/** @schema BanditStatus */
export interface BanditStatus {
  id: string;
  recommended: string[];
  delta_c: number;
  rho: number;
  cutoff?: number;
  glr?: number;
  done: boolean;
  arms: ArmStatus[];
  stop: StopEval;
}

export type State = 'running' | 'paused' | 'stopped';

/** @schema Status */
export interface Status {
  id: string;
  state: State;
  stopped: boolean;
  stop_reason: 'delta_c' | 'glr' | 'glr-heuristic' | 'rho' | 'policy' | 'superiority' | 'futility' | 'budget' | 'manual' | null;
  pulls: number;
  pending: number;
  handed_out?: number;
  budget: number | null;
  policy?: string;
  m?: number;
  delta?: number;
  epsilon?: number;
  bandits_done?: number;
  bandits_total?: number;
  /** BanditStatus items in the full view, BlindedBandit items in the blinded one */
  bandits: BanditStatus[] | BlindedBandit[];
  design_hash?: string;
  design?: Design;
  /** true in the blinded view (a blinded experiment read without scope unblinded) */
  blinded?: true;
}

/** @schema BlindedBandit */
export interface BlindedBandit {
  id: string;
  done?: boolean;
}

/** A status in full: every bandit with its arms, recommendation, δᶜ and stop evaluation. */
export type FullStatus = Status & { blinded?: undefined; bandits: BanditStatus[] };
/** A blinded experiment's status read by a key without scope unblinded: totals,
 * state, whether and why it stopped, each bandit's id and done; nothing per arm. */
export type BlindedStatus = Status & { blinded: true; bandits: BlindedBandit[] };
/** Whether s is the blinded view (narrows the bandits' type). */
export declare function isBlinded(s: Status): s is BlindedStatus;

/** @schema Design */
export interface Design {
  hash: string;
  initial_hash: string;
  frozen: boolean;
  locked: boolean;
  changes: number;
  amendments: DesignChange[];
  blinded: boolean;
}

/** @schema DesignChange */
export interface DesignChange {
  seq: number;
  at: string;
  via: 'patch' | 'amendment';
  amendment: boolean;
  /** absent from the blinded view */
  reason?: string | null;
  previous_hash: string;
  design_hash: string;
}

/** @schema ExperimentPatch */
export interface ExperimentPatch {
  state?: State;
  name?: string;
  goal?: { budget?: number | null };
  assignment_ttl_s?: number;
  reason?: string;
  retire?: { bandit?: string; arm: string };
}

/** @schema FieldError */
export interface FieldError {
  field: string;
  message: string;
}

/** @schema Problem */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: FieldError[];
}

/** An experiment as the API shows it (docs/openapi.json, Experiment). */
export type Experiment = { id: string; state: State } & Record<string, unknown>;

/** Where the visitor's unit id and assignments are kept. */
export interface KeyValueStore {
  get(key: string): string | null;
  set(key: string, value: string): void;
}

export interface ClientOptions {
  /** e.g. "https://bandit.example" */
  baseUrl: string;
  /** An API key; in a page, one limited to its experiments (keys create --experiments). */
  key?: string;
  /** default: globalThis.fetch */
  fetch?: typeof fetch;
  /** times a retryable request is sent again (default 5) */
  retries?: number;
  /** first backoff, doubled each retry, with jitter (default 200 ms) */
  backoffMs?: number;
  /** rewards per request (the daemon's --max-batch; default 1000) */
  batchSize?: number;
  /** queued rewards go out this long after the first (default 2000 ms; 0: only on flush) */
  flushMs?: number;
  /** default: localStorage, else cookies, else memory */
  store?: KeyValueStore;
  /** prefix of the store's keys (default "banditd:") */
  storagePrefix?: string;
  /** use navigator.sendBeacon when the page hides (default true) */
  beacon?: boolean;
  /** flush queued rewards by beacon on pagehide / visibilitychange (default true in a page) */
  flushOnHide?: boolean;
}

export type Rewards =
  | RewardItem[]
  | Array<[string, number]>
  | Record<string, number>;

export type OperationName =
  'create' | 'get' | 'assign' | 'reward' | 'release' | 'served' | 'status' | 'stop';
export declare const OPERATIONS: Readonly<Record<OperationName, readonly [string, string, string]>>;

export declare class BanditdError extends Error {
  constructor(status: number, problem: Problem | Record<string, unknown>, retryAfter?: number | null);
  /** HTTP status; 0 when no answer came */
  readonly status: number;
  readonly problem: Problem;
  /** seconds, from Retry-After */
  readonly retryAfter: number | null;
  readonly type: string;
  readonly slug: string;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly retryable: boolean;
}

export declare class AssignmentBlock {
  constructor(client: Client, experiment: string, size: number, options?: { bandit?: string });
  readonly roundTrips: number;
  /** the next visitor's assignment (a lease every `size` takes); the unit is noted */
  take(unit?: string): Promise<Assignment>;
  /** send which unit got which; null when nothing to send */
  flush(): Promise<ServedResponse | null>;
  /** flush, and release what no visitor got */
  close(): Promise<ReleaseResponse | null>;
}

export declare function localStorageStore(storage?: Storage): KeyValueStore;
export declare function cookieStore(
  doc?: { cookie: string },
  options?: { maxAge?: number; path?: string },
): KeyValueStore;
export declare function memoryStore(): KeyValueStore;

export declare class Client {
  constructor(options: ClientOptions | string);
  create(config: Record<string, unknown>): Promise<Experiment>;
  get(experiment: string): Promise<Experiment>;
  status(experiment: string): Promise<FullStatus | BlindedStatus>;
  stop(experiment: string): Promise<Experiment>;
  assign(
    experiment: string,
    request?: { unit?: string; bandit?: string; count?: number },
  ): Promise<Assignment[]>;
  /** this visitor's unit id, made once and kept */
  unit(): string;
  /** this visitor's assignment: cached until it expires, else asked for with its unit */
  assignment(experiment: string, options?: { bandit?: string }): Promise<Assignment>;
  reward(experiment: string, rewards: Rewards): Promise<RewardResponse>;
  release(experiment: string, assignmentIds: Iterable<string>): Promise<ReleaseResponse>;
  served(
    experiment: string,
    units: Record<string, string> | Array<[string, string]>,
  ): Promise<ServedResponse>;
  block(experiment: string, size: number, options?: { bandit?: string }): AssignmentBlock;
  report(experiment: string, assignmentId: string, value: number): void;
  flush(): Promise<Record<string, RewardResponse>>;
  flushByBeacon(): boolean;
  sendBeacon(experiment: string, items: RewardItem[]): boolean;
}
