// Causal grouped-query attention over a KV cache, one query row at a time.
// Query head h reads key/value head floor(h / (numHeads / numKvHeads)).

export interface AttentionShape {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** attend to at most this many most recent positions; null = all */
  slidingWindow: number | null;
}

/**
 * out[r, h·hd + d] = Σ_j softmax_j(q·k_j / √hd) · v_j[d] for j ≤ pos[r].
 * q rows are read from `q` at `qOff + r·ldq`; keys/values from the row's cache block.
 */
export function attentionForward(
  out: Float32Array, q: Float32Array, qOff: number, ldq: number, rows: number,
  rowK: Float32Array[], rowV: Float32Array[], rowPos: Int32Array, s: AttentionShape, scores: Float64Array,
): void {
  const hd = s.headDim, group = s.numHeads / s.numKvHeads, kvDim = s.numKvHeads * hd, qDim = s.numHeads * hd;
  const scale = 1 / Math.sqrt(hd);
  for (let r = 0; r < rows; r++) {
    const K = rowK[r], V = rowV[r], p = rowPos[r];
    const start = s.slidingWindow === null ? 0 : Math.max(0, p - s.slidingWindow + 1);
    for (let h = 0; h < s.numHeads; h++) {
      const qo = qOff + r * ldq + h * hd, kvo = Math.floor(h / group) * hd;
      let max = -Infinity;
      for (let j = start; j <= p; j++) {
        const ko = j * kvDim + kvo;
        let dot = 0;
        for (let d = 0; d < hd; d++) dot += q[qo + d] * K[ko + d];
        dot *= scale;
        scores[j] = dot;
        if (dot > max) max = dot;
      }
      let sum = 0;
      for (let j = start; j <= p; j++) { const e = Math.exp(scores[j] - max); scores[j] = e; sum += e; }
      const oo = r * qDim + h * hd;
      for (let d = 0; d < hd; d++) out[oo + d] = 0;
      for (let j = start; j <= p; j++) {
        const w = scores[j] / sum, vo = j * kvDim + kvo;
        for (let d = 0; d < hd; d++) out[oo + d] += w * V[vo + d];
      }
    }
  }
}

/**
 * Backward of attentionForward for rows that cover every position of their sequences (training).
 * With P = softmax(S), S_j = q·k_j/√hd, o = Σ P_j v_j and the incoming dO:
 *   dP_j = dO·v_j,  dS_j = P_j (dP_j − dO·o),  dq = Σ dS_j k_j/√hd,  dk_j += dS_j q/√hd,  dv_j += P_j dO.
 * dq goes to `dq` (same layout as q); dK/dV accumulate into the row's [positions × kvDim] blocks.
 */
export function attentionBackward(
  dq: Float32Array, dqOff: number, lddq: number, dOut: Float32Array, out: Float32Array,
  q: Float32Array, qOff: number, ldq: number, rows: number,
  rowK: Float32Array[], rowV: Float32Array[], rowDK: Float32Array[], rowDV: Float32Array[], rowPos: Int32Array,
  s: AttentionShape, scores: Float64Array,
): void {
  const hd = s.headDim, group = s.numHeads / s.numKvHeads, kvDim = s.numKvHeads * hd, qDim = s.numHeads * hd;
  const scale = 1 / Math.sqrt(hd);
  for (let r = 0; r < rows; r++) {
    const K = rowK[r], V = rowV[r], dK = rowDK[r], dV = rowDV[r], p = rowPos[r];
    const start = s.slidingWindow === null ? 0 : Math.max(0, p - s.slidingWindow + 1);
    for (let h = 0; h < s.numHeads; h++) {
      const qo = qOff + r * ldq + h * hd, kvo = Math.floor(h / group) * hd, oo = r * qDim + h * hd, dqo = dqOff + r * lddq + h * hd;
      // recompute the probabilities
      let max = -Infinity;
      for (let j = start; j <= p; j++) {
        const ko = j * kvDim + kvo;
        let dot = 0;
        for (let d = 0; d < hd; d++) dot += q[qo + d] * K[ko + d];
        scores[j] = dot * scale;
        if (scores[j] > max) max = scores[j];
      }
      let sum = 0;
      for (let j = start; j <= p; j++) { scores[j] = Math.exp(scores[j] - max); sum += scores[j]; }
      let dOo = 0;
      for (let d = 0; d < hd; d++) dOo += dOut[oo + d] * out[oo + d];
      for (let d = 0; d < hd; d++) dq[dqo + d] = 0;
      for (let j = start; j <= p; j++) {
        const P = scores[j] / sum, ko = j * kvDim + kvo;
        let dP = 0;
        for (let d = 0; d < hd; d++) { dP += dOut[oo + d] * V[ko + d]; dV[ko + d] += P * dOut[oo + d]; }
        const dS = P * (dP - dOo) * scale;
        for (let d = 0; d < hd; d++) { dq[dqo + d] += dS * K[ko + d]; dK[ko + d] += dS * q[qo + d]; }
      }
    }
  }
}
