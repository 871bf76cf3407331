// Levenberg-Marquardt on the GPU with Jacobi-preconditioned conjugate
// gradients on the normal equations (src/ad/gpu_solve.c).
//
// The Jacobian stays as the generated kernels wrote it: per instance i of a
// group, m rows of k slots, J[(i*m + o)*k + s], slot s reading parameter
// I[i*k + s]. Products with it:
//   jv: w[i*m + o] = sum_s J[(i*m + o)*k + s] * v[I[i*k + s]]   (one thread per instance)
//   jt: out[p] (+)= sum over p's entries e = i*k + s, in instance order,
//                  of sum_o J[(i*m + o)*k + s] * u[i*m + o]       (one thread per parameter)
//       mode 1 sums J^2 instead (the diagonal of J^T J).
// p's entries come from a transposed index built once on the host (ptr,
// ent), so J^T u is a gather in a fixed order: no atomics, the same bits on
// every run.
//
// Reductions (dot products, sums of squares) go through `partial`: a fixed
// number of workgroups (NPART) each writes one partial sum per quantity, and
// `reduce` adds them in a fixed tree order. Scalars live in S:
//   S[0] rz (r.z of CG), S[1] pq (p.q), S[2] rz0, S[3] beta, S[4] done (CG
//   converged or broke down), S[5] scratch, S[8..] results of plain reductions.

override WG: u32 = 256u;
const NPART: u32 = 256u;

struct Uni {
    n: u32,      // elements: instances (jv), parameters (jt, vec), partial sums (reduce)
    k: u32,      // slots per instance
    m: u32,      // outputs per instance
    row: u32,    // invocations per row of a 2-D grid
    op: u32,     // jt: bit 0 accumulate, bit 1 squares; vec: the operation; reduce: the mode
    a: u32,      // vec/reduce: partial slot or S index
    b: u32,
    c: u32,
    mu: f32,
    eta2: f32,   // CG: stop when r.z <= eta2 * r0.z0
    _p0: f32,
    _p1: f32,
}

@group(0) @binding(0) var<storage, read> J: array<f32>;
@group(0) @binding(1) var<storage, read> I: array<u32>;
@group(0) @binding(2) var<storage, read> V: array<f32>;
@group(0) @binding(3) var<storage, read_write> W: array<f32>;
@group(0) @binding(4) var<uniform> U: Uni;

fn gindex(gid: vec3<u32>) -> u32 { return gid.x + gid.y * U.row; }

@compute @workgroup_size(WG)
fn jv(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gindex(gid);
    if (i >= U.n) { return; }
    for (var o = 0u; o < U.m; o = o + 1u) {
        var s = 0.0;
        let jr = (i * U.m + o) * U.k;
        for (var t = 0u; t < U.k; t = t + 1u) {
            s = s + J[jr + t] * V[I[i * U.k + t]];
        }
        W[i * U.m + o] = s;
    }
}

// jt: bindings J, I = ptr (n + 1) followed by the entries (at U.b), V = u, W = out
@compute @workgroup_size(WG)
fn jt(@builtin(global_invocation_id) gid: vec3<u32>) {
    let p = gindex(gid);
    if (p >= U.n) { return; }
    var s = 0.0;
    let lo = I[p];
    let hi = I[p + 1u];
    let sq = (U.op & 2u) != 0u;
    for (var e = lo; e < hi; e = e + 1u) {
        let ent = I[U.b + e];
        let i = ent / U.k;
        let slot = ent - i * U.k;
        for (var o = 0u; o < U.m; o = o + 1u) {
            let j = J[(i * U.m + o) * U.k + slot];
            s = s + select(j * V[i * U.m + o], j * j, sq);
        }
    }
    if ((U.op & 1u) != 0u) { W[p] = W[p] + s; } else { W[p] = s; }
}

// ---- reductions: partial sums by NPART workgroups, then one tree ----------

var<workgroup> sh: array<f32, WG>;

fn tree(lid: u32, v: f32) -> f32 {
    sh[lid] = v;
    workgroupBarrier();
    var s = WG / 2u;
    loop {
        if (s == 0u) { break; }
        if (lid < s) { sh[lid] = sh[lid] + sh[lid + s]; }
        workgroupBarrier();
        s = s / 2u;
    }
    return sh[0];
}

// sumsq: partial[U.a * NPART + wg] = sum of V[i]^2 over this workgroup's
// stride (U.op = 1: of V[i], the plain sum)
@group(0) @binding(5) var<storage, read_write> PART: array<f32>;
@group(0) @binding(6) var<storage, read_write> S: array<f32>;

// A kernel run by nw < NPART workgroups: workgroup 0 zeroes the slot's
// partials nw..NPART-1, so that every reader may sum all NPART.
fn zero_tail(slot: u32, wg: u32, nw: u32, lid: u32) {
    if (wg != 0u) { return; }
    for (var j = nw + lid; j < NPART; j = j + WG) { PART[slot * NPART + j] = 0.0; }
}

@compute @workgroup_size(WG)
fn sumsq(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wg3: vec3<u32>,
         @builtin(num_workgroups) nw3: vec3<u32>) {
    let lid = lid3.x;
    zero_tail(U.a, wg3.x, nw3.x, lid);
    var s = 0.0;
    for (var i = wg3.x * WG + lid; i < U.n; i = i + nw3.x * WG) {
        let v = V[i];
        s = s + select(v * v, v, U.op == 1u);
    }
    let t = tree(lid, s);
    if (lid == 0u) { PART[U.a * NPART + wg3.x] = t; }
}

// ---- robust losses ----------------------------------------------------------
// loss: one thread per instance of a group with a loss (U.op the kind, as
// pxl_ad_loss_kind: 1 Huber, 2 soft L1, 3 Cauchy, 4 arctan, 5 Tukey; U.mu
// the scale a): s = sum_o f_o^2, rho(s) into RHO[i] (the cost is 1/2 their
// sum), then the instance's residuals LR and Jacobian rows LJ corrected in
// place as src/ad/loss.c's ad_loss_correct does. rho, rho', rho'' are
// loss.c's, in f32, written where they would cancel for small s / a^2 in
// forms that do not (log1p, sqrt(1 + t) - 1 = t / (sqrt(1 + t) + 1),
// 1 - (1 - t)^3 = t (1 + v + v^2)). A residual vector whose s is not finite
// is left as it is and its rho is s (Inf or NaN: the cost is not finite).
@group(0) @binding(7) var<storage, read_write> LR: array<f32>;
@group(0) @binding(8) var<storage, read_write> LJ: array<f32>;
@group(0) @binding(9) var<storage, read_write> RHO: array<f32>;

const FLT_MIN: f32 = 1.17549435e-38; // rho' is kept above it where positive (loss.c: DBL_MIN)

// log(1 + t) without the cancellation of 1 + t for small t
fn log1p_(t: f32) -> f32 {
    let u = 1.0 + t;
    if (u == 1.0) { return t; }
    return log(u) * t / (u - 1.0);
}

@compute @workgroup_size(WG)
fn loss(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gindex(gid);
    if (i >= U.n) { return; }
    let m = U.m;
    let k = U.k;
    var s = 0.0;
    for (var o = 0u; o < m; o = o + 1u) {
        let f = LR[i * m + o];
        s = s + f * f;
    }
    if (!(s <= 0x1.fffffep+127f)) { RHO[i] = s; return; }
    let a = U.mu;
    let b = a * a;
    var r0 = s;
    var r1 = 1.0;
    var r2 = 0.0;
    switch U.op {
        case 1u: { // Huber
            if (s > b) {
                let r = sqrt(s);
                r0 = 2.0 * a * r - b;
                r1 = max(FLT_MIN, a / r);
                r2 = -r1 / (2.0 * s);
            }
        }
        case 2u: { // soft L1
            let t = s / b;
            let q = sqrt(1.0 + t);
            r0 = 2.0 * b * (t / (q + 1.0));
            r1 = max(FLT_MIN, 1.0 / q);
            r2 = -r1 / (2.0 * b * (1.0 + t));
        }
        case 3u: { // Cauchy
            let t = s / b;
            let inv = 1.0 / (1.0 + t);
            r0 = b * log1p_(t);
            r1 = max(FLT_MIN, inv);
            r2 = -inv * inv / b;
        }
        case 4u: { // arctan
            let t = s / b;
            let inv = 1.0 / (1.0 + t * t);
            r0 = b * atan(t);
            r1 = max(FLT_MIN, inv);
            r2 = -2.0 * t / b * inv * inv;
        }
        case 5u: { // Tukey
            if (s <= b) {
                let t = s / b;
                let v = 1.0 - t;
                r0 = b / 3.0 * (t * (1.0 + v + v * v));
                r1 = v * v;
                r2 = -2.0 / b * v;
            } else {
                r0 = b / 3.0;
                r1 = 0.0;
                r2 = 0.0;
            }
        }
        default: {}
    }
    RHO[i] = r0;
    // Ceres' corrector: Triggs' rank-1 term where rho'' > 0 and s > 0, else
    // residuals and rows scaled by sqrt(rho')
    let sr1 = sqrt(r1);
    var scale = sr1;
    var alpha_s = 0.0;
    if (s != 0.0 && r2 > 0.0 && r1 > 0.0) {
        let alpha = 1.0 - sqrt(1.0 + 2.0 * s * r2 / r1);
        scale = sr1 / (1.0 - alpha);
        alpha_s = alpha / s;
    }
    let jb = i * m * k;
    if (alpha_s == 0.0) {
        for (var e = 0u; e < m * k; e = e + 1u) { LJ[jb + e] = LJ[jb + e] * sr1; }
    } else {
        for (var c = 0u; c < k; c = c + 1u) {
            var fj = 0.0;
            for (var r = 0u; r < m; r = r + 1u) { fj = fj + LR[i * m + r] * LJ[jb + r * k + c]; }
            for (var r = 0u; r < m; r = r + 1u) {
                LJ[jb + r * k + c] = sr1 * (LJ[jb + r * k + c] - alpha_s * LR[i * m + r] * fj);
            }
        }
    }
    for (var r = 0u; r < m; r = r + 1u) { LR[i * m + r] = LR[i * m + r] * scale; }
}

// reduce: sums U.n partial slots starting at slot U.a into S[U.b] (mode 0);
// mode 1 is CG's r.z bookkeeping (U.c = 1 on the first iteration).
@compute @workgroup_size(WG)
fn reduce(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    var s = 0.0;
    for (var q = 0u; q < U.n; q = q + 1u) { s = s + PART[(U.a + q) * NPART + lid]; }
    let t = tree(lid, s);
    if (lid != 0u) { return; }
    if (U.op == 0u) { S[U.b] = t; return; }
    // CG: t = r.z after an update
    if (U.c == 1u) {
        S[2] = t;
        S[0] = t;
        S[4] = select(0.0, 1.0, !(t > 0.0) || t > 3.0e38);
        return;
    }
    if (S[4] != 0.0) { return; }
    if (!(S[1] > 0.0)) { S[4] = 1.0; return; } // p.q <= 0: the system is not positive definite along p
    let rz = S[0];
    if (!(t >= 0.0) || t > 3.0e38) { S[4] = 1.0; return; }
    S[3] = t / rz;
    S[0] = t;
    if (t <= U.eta2 * S[2]) { S[4] = 1.0; }
}

// ---- parameter-space vector operations ------------------------------------
// Bindings (vops): J = g (gradient), I unused, V = diag (of J^T J), W = the
// state block: n-vectors x, lo, hi, D, M, delta, r, z, p, q, xt at offsets
// U.b * (0..10) (U.b = the padded n).
const X_ = 0u; const LO = 1u; const HI = 2u; const D_ = 3u; const M_ = 4u;
const DL = 5u; const R_ = 6u; const Z_ = 7u; const P_ = 8u; const Q_ = 9u; const XT = 10u;

fn at(v: u32, i: u32) -> u32 { return v * U.b + i; }

@compute @workgroup_size(WG)
fn vops(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wg3: vec3<u32>,
        @builtin(num_workgroups) nw3: vec3<u32>) {
    let lid = lid3.x;
    var s0 = 0.0; var s1 = 0.0; var s2 = 0.0;
    let done = S[4] != 0.0;
    if (U.op == 1u || U.op == 2u || U.op == 3u || U.op == 6u) { zero_tail(U.a, wg3.x, nw3.x, lid); }
    if (U.op == 6u) { zero_tail(U.a + 1u, wg3.x, nw3.x, lid); }
    if (U.op == 5u) {
        zero_tail(U.a, wg3.x, nw3.x, lid);
        zero_tail(U.a + 1u, wg3.x, nw3.x, lid);
        zero_tail(U.a + 2u, wg3.x, nw3.x, lid);
    }
    for (var i = wg3.x * WG + lid; i < U.n; i = i + nw3.x * WG) {
        switch U.op {
            case 0u: { // damping: D = clamp(diag, 1e-6, 1e32); M = diag + mu D (free parameters: diag > 0 or D)
                let d = V[i];
                let dd = clamp(d, 1.0e-6, 1.0e32);
                W[at(D_, i)] = dd;
                W[at(M_, i)] = d + U.mu * dd;
            }
            case 1u: { // CG start: delta = 0, r = -g, z = r / M, p = z; partial r.z
                let r = -J[i];
                let z = r / W[at(M_, i)];
                W[at(DL, i)] = 0.0;
                W[at(R_, i)] = r;
                W[at(Z_, i)] = z;
                W[at(P_, i)] = z;
                s0 = s0 + r * z;
            }
            case 2u: { // q += mu D p (q = J^T J p from jt); partial p.q
                let p = W[at(P_, i)];
                let q = W[at(Q_, i)] + U.mu * W[at(D_, i)] * p;
                W[at(Q_, i)] = q;
                s0 = s0 + p * q;
            }
            case 3u: { // alpha = rz / pq; delta += alpha p; r -= alpha q; z = r / M; partial r.z
                var alpha = 0.0;
                if (!done && S[1] > 0.0) { alpha = S[0] / S[1]; }
                let r = W[at(R_, i)] - alpha * W[at(Q_, i)];
                W[at(DL, i)] = W[at(DL, i)] + alpha * W[at(P_, i)];
                W[at(R_, i)] = r;
                let z = r / W[at(M_, i)];
                W[at(Z_, i)] = z;
                s0 = s0 + r * z;
            }
            case 4u: { // p = z + beta p
                if (!done) { W[at(P_, i)] = W[at(Z_, i)] + S[3] * W[at(P_, i)]; }
            }
            case 5u: { // trial point: xt = clamp(x + delta, lo, hi); delta = xt - x;
                       // partials: delta.delta, g.delta, x.x
                let x = W[at(X_, i)];
                let xt = clamp(x + W[at(DL, i)], W[at(LO, i)], W[at(HI, i)]);
                let dl = xt - x;
                W[at(XT, i)] = xt;
                W[at(DL, i)] = dl;
                s0 = s0 + dl * dl;
                s1 = s1 + J[i] * dl;
                s2 = s2 + x * x;
            }
            case 7u: { // accept the trial point: x = xt
                W[at(X_, i)] = W[at(XT, i)];
            }
            case 6u: { // partial max of the projected gradient |x - clamp(x - g, lo, hi)| (x: vector U.c)
                       // and partial sum of g^2 (a sum carries NaN and Inf, max() need not)
                let x = W[at(U.c, i)];
                let g = J[i];
                s0 = max(s0, abs(x - clamp(x - g, W[at(LO, i)], W[at(HI, i)])));
                s1 = s1 + g * g;
            }
            default: {}
        }
    }
    if (U.op == 1u || U.op == 2u || U.op == 3u || U.op == 5u) {
        let t0 = tree(lid, s0);
        if (lid == 0u) { PART[U.a * NPART + wg3.x] = t0; }
        workgroupBarrier();
    }
    if (U.op == 5u) {
        let t1 = tree(lid, s1);
        if (lid == 0u) { PART[(U.a + 1u) * NPART + wg3.x] = t1; }
        workgroupBarrier();
        let t2 = tree(lid, s2);
        if (lid == 0u) { PART[(U.a + 2u) * NPART + wg3.x] = t2; }
    }
    if (U.op == 6u) {
        sh[lid] = s0;
        workgroupBarrier();
        var st = WG / 2u;
        loop {
            if (st == 0u) { break; }
            if (lid < st) { sh[lid] = max(sh[lid], sh[lid + st]); }
            workgroupBarrier();
            st = st / 2u;
        }
        if (lid == 0u) { PART[U.a * NPART + wg3.x] = sh[0]; }
        workgroupBarrier();
        let t1 = tree(lid, s1);
        if (lid == 0u) { PART[(U.a + 1u) * NPART + wg3.x] = t1; }
    }
}
