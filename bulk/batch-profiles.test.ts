import { describe, expect, it } from 'vitest';
import { ValidationError } from '../platform/errors.js';
import { prepareProfileWrite } from '../records/record.service.js';
import { BatchProfiles, profileCandidates } from './batch-profiles.js';

/** A view over `found`, with what `lines` send as candidates (lower-cased as ASCII, as Postgres would these). */
function viewOf(found: Array<{ id: string; email: string | null; created_seq: number }>, lines: Array<Record<string, unknown>>) {
  const candidates = profileCandidates(lines.map((line) => ({ profile: line })));
  return new BatchProfiles(candidates, new Map([...candidates.emails].map((email) => [email, email.toLowerCase()])), found);
}

/** Each line's outcome in order, as a bulk block takes them: the id it writes, or its error class. */
async function outcomes(view: BatchProfiles, lines: Array<Record<string, unknown>>) {
  const result: string[] = [];
  for (const line of lines) {
    try {
      const prepared = await prepareProfileWrite(view, { profile: line });
      view.wrote(prepared);
      result.push(prepared.id);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      result.push(`${error.errorClass}:${error.parameters.join(',')}`);
    }
  }
  return result;
}

const FOUND = [
  { id: 'old', email: 'shared@example.test', created_seq: 10 },
  { id: 'young', email: 'shared@example.test', created_seq: 20 },
  { id: 'plain', email: null, created_seq: 5 },
];

describe('when the candidates of a block are collected from its bodies', () => {
  it('should take ids as text, emails as sent, and nothing from what is not a record', () => {
    const candidates = profileCandidates([
      { profile: { id: 7, email: 'A@example.test' } },
      { profile: { id: '7', email: ['not', 'text'] } },
      { profile: { id: true, email: 'b@example.test' } },
      { profile: null },
      { profile: ['x'] },
      { profile: 'x' },
    ]);
    expect(candidates).toEqual({ ids: new Set(['7']), emails: new Set(['A@example.test', 'b@example.test']) });
  });
});

describe('when a block of profile lines is matched against the profiles it found', () => {
  it.each<[string, Array<Record<string, unknown>>, string[]]>([
    [
      'match by id first, then by email to the oldest profile',
      [{ id: 'young', email: 'Shared@Example.test' }, { id: 'new', email: 'SHARED@example.test' }, { email: 'shared@example.test' }],
      ['young', 'old', 'old'],
    ],
    [
      'ask a new profile for what it lacks, as a single request does',
      [{ id: 'nobody' }, { email: 'nobody@example.test' }, { id: 'plain' }],
      ['missing_parameters:email', 'missing_parameters:id', 'plain'],
    ],
    [
      "see the block's own writes: a profile created, an email moved, an email kept",
      [
        { id: 'p1', email: 'first@example.test' },
        { email: 'FIRST@example.test', first_name: 'matched' },
        { id: 'old', email: 'moved@example.test' },
        { id: 'p2', email: 'shared@example.test' },
        { email: 'moved@example.test' },
        { id: 'young', first_name: 'email kept' },
        { email: 'shared@example.test' },
        { id: 'plain', email: 'moved@example.test' },
        { email: 'moved@example.test' },
      ],
      ['p1', 'p1', 'old', 'young', 'old', 'young', 'young', 'plain', 'plain'],
    ],
    [
      'take a profile created in the block as younger than every profile it found',
      [
        { id: 'young', email: 'gone@example.test' },
        { id: 'old', email: 'gone@example.test' },
        { id: 'fresh', email: 'again@example.test' },
        { id: 'old', email: 'again@example.test' },
        { email: 'again@example.test' },
        { email: 'gone@example.test' },
      ],
      ['young', 'old', 'fresh', 'old', 'old', 'young'],
    ],
  ])('should %s', async (_name, lines, expected) => {
    expect(await outcomes(viewOf(FOUND, lines), lines)).toEqual(expected);
  });

  it('should refuse to answer for an id or email the block did not look up', () => {
    const view = viewOf(FOUND, [{ id: 'old', email: 'shared@example.test' }]);
    expect(() => view.isLive('elsewhere')).toThrow(/not among the block's candidates/);
    expect(() => view.idByEmail('elsewhere@example.test')).toThrow(/not among the block's candidates/);
  });
});
