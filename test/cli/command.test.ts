// The CLI layer on its own: option kinds, where values come from, suggestions and generated help.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineCommand, opt, editDistance, suggest, UsageError } from '../../src/cli/command.ts';
import { tempDir } from '../helpers/models.ts';

const example = defineCommand({
  name: 'example',
  summary: 'a command for the tests',
  configFile: { env: 'EXAMPLE_CONFIG' },
  options: {
    port: opt.port('port', { default: 30000, env: 'PORT' }),
    host: opt.string('host', { env: ['EXAMPLE_HOST', 'HOST'] }),
    steps: opt.int('steps', { min: 1, max: 10, default: 3 }),
    rate: opt.number('rate', { gt: 0 }),
    kind: opt.choice(['alpha', 'beta'], 'kind', { default: 'alpha' }),
    stop: opt.list('stop text'),
    json: opt.flag('json'),
  },
  check: (o) => { if (o.kind === 'beta' && o.rate === undefined) throw new UsageError('--kind beta needs --rate'); },
  run: async () => {},
});

const usage = (f: () => unknown, re: RegExp) => assert.throws(f, (e: Error) => e instanceof UsageError && re.test(e.message), String(re));

test('values are typed and defaulted: numbers become numbers, switches booleans, lists arrays', () => {
  assert.deepEqual(example.parse([], {}), { port: 30000, host: undefined, steps: 3, rate: undefined, kind: 'alpha', stop: [], json: false });
  assert.deepEqual(example.parse(['--port', '8080', '--steps=7', '--rate', '0.5', '--kind', 'beta', '--stop', 'a', '--stop', 'b', '--json'], {}),
    { port: 8080, host: undefined, steps: 7, rate: 0.5, kind: 'beta', stop: ['a', 'b'], json: true });
});

test('the command line wins over the config file, the file over the environment, the environment over the default', () => {
  const t = tempDir();
  try {
    const file = join(t.dir, 'c.json');
    writeFileSync(file, JSON.stringify({ steps: 5, host: 'from-file' }));
    const env = { PORT: '1234', HOST: 'from-env-2', EXAMPLE_HOST: 'from-env-1', EXAMPLE_CONFIG: file };
    assert.deepEqual([example.parse([], env).port, example.parse([], env).host, example.parse([], env).steps], [1234, 'from-file', 5]);
    assert.equal(example.parse(['--host', 'flag', '--port', '1'], env).host, 'flag');
    assert.equal(example.parse([], { HOST: 'second' }).host, 'second');
    assert.equal(example.parse([], { EXAMPLE_HOST: 'first', HOST: 'second' }).host, 'first');
    writeFileSync(file, JSON.stringify({ stpes: 5 }));
    usage(() => example.parse(['--config', file], {}), /config file .*c\.json: unknown option 'stpes' \(did you mean steps\?\)/);
    writeFileSync(file, '{');
    usage(() => example.parse(['--config', file], {}), /is not valid JSON/);
    usage(() => example.parse(['--config', join(t.dir, 'missing.json')], {}), /config file not found/);
  } finally {
    t.cleanup();
  }
});

test('every bad value is refused with a message naming the flag (or variable), the rule and the value', () => {
  const table: [string[], Record<string, string>, RegExp][] = [
    [['--port', '0'], {}, /--port expects a port number from 1 to 65535, got '0'/],
    [['--port', '65536'], {}, /--port expects a port number from 1 to 65535, got '65536'/],
    [['--port', '80.5'], {}, /--port expects a port number/],
    [[], { PORT: 'http' }, /PORT \(environment\) expects a port number from 1 to 65535, got 'http'/],
    [['--steps', '11'], {}, /--steps expects an integer ≥ 1 and ≤ 10, got '11'/],
    [['--steps', ''], {}, /--steps expects an integer/],
    [['--rate', '0'], {}, /--rate expects a number > 0, got '0'/],
    [['--rate', 'NaN'], {}, /--rate expects a number > 0, got 'NaN'/],
    [['--kind', 'gamma'], {}, /--kind must be one of alpha, beta; got 'gamma'/],
    [['--kind', 'bet'], {}, /did you mean beta\?/],
    [['--kind', 'beta'], {}, /--kind beta needs --rate/],
    [['--prot', '1'], {}, /unknown option '--prot' \(did you mean --port\?\)/],
    [['--port'], {}, /--port needs a value/],
    [['--json=yes'], {}, /--json is a switch and takes no value/],
    [['--port', '1', '--port', '2'], {}, /--port is given more than once/],
    [['stray'], {}, /unexpected argument 'stray'/],
    [['-x'], {}, /unknown option '-x'/],
  ];
  for (const [argv, env, re] of table) usage(() => example.parse(argv, env), re);
});

test('suggestions: the closest name within a couple of edits, or a prefix; nothing for unrelated words', () => {
  assert.equal(editDistance('prot', 'port'), 2);
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(suggest('lerning-rate', ['learning-rate', 'lora-rank']), ' (did you mean --learning-rate?)');
  assert.equal(suggest('judge', ['judge-url', 'method']), ' (did you mean --judge-url?)');
  assert.equal(suggest('zzzzzz', ['port', 'host']), '');
  assert.equal(suggest('serv', ['serve', 'status'], ''), ' (did you mean serve?)');
});

test('help is generated from the declaration: placeholders, defaults, environment variables, choices, exit codes', () => {
  const help = example.help();
  assert.match(help, /^Usage: openclaw-rl example \[options\]/);
  assert.match(help, /--port PORT\s+port \(default 30000; env PORT\)/);
  assert.match(help, /--host TEXT\s+host \(env EXAMPLE_HOST, HOST\)/);
  assert.match(help, /--kind alpha\|beta\s+kind \(default alpha\)/);
  assert.match(help, /--stop TEXT\s+stop text \(repeatable\)/);
  assert.match(help, /--config FILE/);
  assert.match(help, /-h, --help/);
  assert.match(help, /Exit codes: 0 success, 1 runtime failure, 2 usage error/);
});
