import type { Rng } from './scenario.js';

type Line = Record<string, unknown>;

const IDS = Array.from({ length: 12 }, (_, index) => `${index + 1}`);
const EMAILS = Array.from({ length: 8 }, (_, index) => `m${index}@example.test`);

/** The same address as a client might type it: the profile rule (interface §4.5) compares emails case-insensitively. */
const anyCase = (r: Rng, email: string) => [...email].map((letter) => (r.chance(0.3) ? letter.toUpperCase() : letter)).join('');

/**
 * Lines of a file that is mostly profiles whose ids and emails collide, so
 * the profile rule (interface §4.5) matches across lines: by id, by an email in another case, to the
 * oldest of several profiles that share an email after writes moved it;
 * profiles without an id or an email (a 400 unless they match), with a field
 * refused (whose missing id or email is reported first when nothing
 * matches), deletes of profiles, and categories between them.
 */
export function profileHeavyLines(r: Rng, count: number, generation: 'v1' | 'v2'): Line[] {
  const lines: Line[] = [];
  while (lines.length < count) {
    const roll = r.next();
    if (roll < 0.74) {
      const profile: Line = {};
      // v2 needs both on every write; a few lines without one show its refusal.
      const keep = generation === 'v2' ? 0.95 : 0.8;
      if (r.chance(keep)) {
        const id = r.pick(IDS);
        profile['id'] = generation === 'v1' && r.chance(0.25) ? Number(id) : id;
      }
      if (r.chance(keep)) profile['email'] = anyCase(r, r.pick(EMAILS));
      if (r.chance(0.4)) profile['first_name'] = `n${lines.length}`;
      if (r.chance(0.05)) profile['gender'] = 'robot';
      lines.push({ profile });
    } else if (roll < 0.86) {
      lines.push({ delete: { kind: 'profile', id: r.pick(IDS) } });
    } else {
      lines.push({ category: { id: `c${r.int(3)}`, name: `c${lines.length}` } });
    }
  }
  return lines;
}
