// The Tinker protobuf codec: hand-assembled fixtures (bytes written out from the field table of the
// protocol notes, not produced by our encoder) decode to the documented messages, our encoder
// produces exactly those bytes, and every message round-trips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeForwardBackwardRequest, decodeForwardBackwardRequest, encodeSampleResponse, decodeSampleResponse,
  encodeForwardBackwardOutput, decodeForwardBackwardOutput, ProtoError,
} from '../../../src/engine/tinker/proto.ts';

/** hex bytes; `#` starts a comment to the end of the line */
const hex = (s: string) => Uint8Array.from(s.replace(/#.*$/gm, '').replace(/\s+/g, '').match(/../g)!.map((b) => parseInt(b, 16)));
const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');

// SampleResponse { sequences: [{ stop_reason: LENGTH, tokens: [5], logprobs: [-0.5] }] }
const SAMPLE_FIXTURE = hex(`
  0a 0e              # sequences (1), 14 bytes
    08 01            # stop_reason (1) = LENGTH
    12 04 05000000   # tokens (2): int32 LE [5]
    1a 04 000000bf   # logprobs (3): float32 LE [-0.5]
`);

// ForwardBackwardRequest { model_id: "m", seq_id: 2, data: [{ model_input: [encoded_text [7]],
//   loss_fn_inputs: { t: int64 [8] shape [1] } }], loss_fn: "ppo" }
const FWDBWD_FIXTURE = hex(`
  0a 01 6d                      # model_id (1) "m"
  10 02                         # seq_id (2) = 2
  1a 20                         # data (3): Datum, 32 bytes
    0a 08 0a 06 0a 04 07000000  #   model_input (1): Chunk { encoded_text (1) { tokens (1): int32 LE [7] } }
    12 14 0a 01 74              #   loss_fn_inputs (2) map entry: key "t"
      12 0f                     #     value: Tensor, 15 bytes
        0a 08 0800000000000000  #       dense (1): int64 LE [8]
        18 02                   #       dtype (3) = INT64
        22 01 01                #       shape (4): packed [1]
  22 03 70706f                  # loss_fn (4) "ppo"
`);

test('a SampleResponse assembled by hand from the field table decodes to the documented sequence', () => {
  const r = decodeSampleResponse(SAMPLE_FIXTURE);
  assert.deepEqual(r.sequences, [{ stop_reason: 'length', tokens: [5], logprobs: [-0.5] }]);
  assert.equal(r.prompt_logprobs, undefined);
  assert.equal(toHex(encodeSampleResponse(r)), toHex(SAMPLE_FIXTURE));
});

test('a ForwardBackwardRequest assembled by hand decodes, and our encoder writes exactly those bytes', () => {
  const r = decodeForwardBackwardRequest(FWDBWD_FIXTURE);
  assert.equal(r.model_id, 'm');
  assert.equal(r.seq_id, 2);
  assert.equal(r.forward_only, false);
  assert.equal(r.input.loss_fn, 'ppo');
  assert.deepEqual(r.input.data, [{ model_input: { chunks: [{ type: 'encoded_text', tokens: [7] }] }, loss_fn_inputs: { t: { data: [8], dtype: 'int64', shape: [1] } } }]);
  assert.equal(toHex(encodeForwardBackwardRequest(r)), toHex(FWDBWD_FIXTURE));
});

test('ForwardBackwardRequest round-trips with float inputs, a loss config map and forward_only', () => {
  const msg = {
    model_id: 'sess-7f3c:train:0', seq_id: 300, forward_only: true,
    input: {
      loss_fn: 'ppo', loss_fn_config: { clip_low_threshold: 0.8, clip_high_threshold: 1.28 },
      data: [{
        model_input: { chunks: [{ type: 'encoded_text' as const, tokens: [151644, 872, 198, 9707, 0] }] },
        loss_fn_inputs: {
          target_tokens: { data: [872, 198, 9707, 0, 151645], dtype: 'int64' as const, shape: [5] },
          logprobs: { data: [0, 0, 0, -0.5, -0.25], dtype: 'float32' as const, shape: [5] },
          advantages: { data: [0, 0, 0, 1, 1], dtype: 'float32' as const, shape: [5] },
        },
      }],
    },
  };
  assert.deepEqual(decodeForwardBackwardRequest(encodeForwardBackwardRequest(msg)), msg);
});

test('SampleResponse round-trips prompt log-probs (NaN ↔ null at the first position) and top-k rows', () => {
  const msg = {
    type: 'sample' as const,
    sequences: [{ stop_reason: 'stop' as const, tokens: [40, 1079, 151645], logprobs: [-0.125, -0.5, -0.0625] }, { stop_reason: 'length' as const, tokens: [], logprobs: [] }],
    prompt_logprobs: [null, -7.25, -0.375],
    topk_prompt_logprobs: [null, [[872, -0.375], [198, -1.5]] as [number, number][], [[198, -0.125], [13, -2.75]] as [number, number][]],
    prompt_cache_hit_tokens: 3,
  };
  assert.deepEqual(decodeSampleResponse(encodeSampleResponse(msg)), msg);
});

test('ForwardBackwardOutput round-trips one record per datum with byte offsets and name:reduction metrics', () => {
  const msg = {
    loss_fn_output_type: 'ArrayRecord',
    loss_fn_outputs: [{ logprobs: { data: [-3.5, -0.25], dtype: 'float32' as const, shape: [2] } }, { logprobs: { data: [-1, -2, -0.5], dtype: 'float32' as const, shape: [3] } }],
    metrics: { 'loss:sum': 0.5, 'grad_norm:mean': 1.25 },
  };
  assert.deepEqual(decodeForwardBackwardOutput(encodeForwardBackwardOutput(msg)), msg);
});

test('a decoder skips fields it does not know (newer senders) and refuses truncated bytes', () => {
  // field 15 (varint 1) and field 14 (a 2-byte string) in front of the fixture
  const withUnknown = new Uint8Array([0x78, 0x01, 0x72, 0x02, 0x68, 0x69, ...SAMPLE_FIXTURE]);
  assert.deepEqual(decodeSampleResponse(withUnknown).sequences[0].tokens, [5]);
  assert.throws(() => decodeSampleResponse(SAMPLE_FIXTURE.subarray(0, 8)), ProtoError);
  assert.throws(() => decodeForwardBackwardRequest(new Uint8Array([0x0a, 0x05, 0x01])), ProtoError);
});
