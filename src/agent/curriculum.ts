// Adaptive environment difficulty (RLAnything): tasks carry a difficulty level, and a curriculum keeps
// the policy's running success rate inside a target band by choosing harder tasks when it succeeds
// too often and easier ones when it fails too often. The running rate is taken over the last
// `window` episodes at the current level; a move needs at least `minEpisodes` of them, and clears
// the window (the new level starts its own count). Pure; the task source around it generates tasks
// of the chosen level.
import type { Task } from '../env/types.ts';

export interface CurriculumOptions {
  /** the target band of the running success rate, e.g. [0.3, 0.7] */
  band: [number, number];
  window: number;
  /** episodes at a level before it may change */
  minEpisodes: number;
  startLevel: number;
  minLevel: number;
  maxLevel: number;
}

export const CURRICULUM_DEFAULTS: CurriculumOptions = { band: [0.3, 0.7], window: 32, minEpisodes: 16, startLevel: 1, minLevel: 1, maxLevel: 5 };

export interface CurriculumStep {
  /** the level the group was played at */
  level: number;
  /** running success rate at that level after the group */
  success: number;
  /** episodes behind that rate */
  episodes: number;
  inBand: boolean;
  move: 'up' | 'down' | 'stay';
  /** the level the next tasks are drawn at */
  next: number;
}

export class Curriculum {
  readonly o: CurriculumOptions;
  level: number;
  private recent: boolean[] = [];

  constructor(o: Partial<CurriculumOptions> = {}) {
    this.o = { ...CURRICULUM_DEFAULTS, ...o };
    const [lo, hi] = this.o.band;
    if (!(lo >= 0 && hi <= 1 && lo < hi)) throw new RangeError(`the band must satisfy 0 ≤ low < high ≤ 1, got [${lo}, ${hi}]`);
    if (this.o.minLevel > this.o.maxLevel) throw new RangeError('minLevel > maxLevel');
    this.level = Math.min(this.o.maxLevel, Math.max(this.o.minLevel, this.o.startLevel));
  }

  /** Record a finished group's outcomes (played at `level`); outcomes of an older level are ignored. */
  record(level: number, outcomes: boolean[]): CurriculumStep {
    if (level === this.level) {
      this.recent.push(...outcomes);
      if (this.recent.length > this.o.window) this.recent.splice(0, this.recent.length - this.o.window);
    }
    const n = this.recent.length;
    const success = n ? this.recent.filter(Boolean).length / n : 0;
    const [lo, hi] = this.o.band;
    let move: CurriculumStep['move'] = 'stay';
    if (n >= this.o.minEpisodes) {
      if (success > hi && this.level < this.o.maxLevel) move = 'up';
      else if (success < lo && this.level > this.o.minLevel) move = 'down';
    }
    const step: CurriculumStep = { level, success, episodes: n, inBand: success >= lo && success <= hi, move, next: this.level };
    if (move !== 'stay') {
      this.level += move === 'up' ? 1 : -1;
      this.recent = [];
      step.next = this.level;
    }
    return step;
  }
}

/** Where `agent train` takes its tasks: in order from a list, or from a source that may adapt. */
export interface TaskSource {
  next(group: number): Task;
  /** a group of this task finished: what to log for it (curriculum step), if anything */
  onGroup?(task: Task, successes: boolean[]): Record<string, unknown> | undefined;
}

/** A curriculum over a leveled task generator: each task drawn at the current level. */
export function curriculumSource(curriculum: Curriculum, make: (seed: number, level: number) => Task): TaskSource & { curriculum: Curriculum; log: CurriculumStep[] } {
  let seed = 0;
  const log: CurriculumStep[] = [];
  return {
    curriculum, log,
    next: () => make(seed++, curriculum.level),
    onGroup: (task, successes) => {
      const step = curriculum.record(Number(task.difficulty), successes);
      log.push(step);
      return { curriculum: step };
    },
  };
}
