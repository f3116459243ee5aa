"""The numba source of :mod:`.fused_pairs`: the (replica, block pair) tasks of the all-pairs sum, each one fused pass
per pair, and their fixed-order reduction. Plain Python over numpy arrays (it runs uncompiled too); compiled with
``nogil`` by :func:`.fused_pairs._kernel`.
"""

from __future__ import annotations

import math

import numpy as np


def pairs_tasks(HL, HR, y, lam, wts, mult, cls, val, k, n_pow, e_pow, alpha, rho, symmetric, B, need, f32,
                blk_i, blk_j, first, stride, tot, rowbuf, colbuf):
    """The tasks t = first, first + stride, … of the (replica, block pair) grid: tot[t] = Σ_{pairs of t} w_ij Σ_l
    wts_l [λ_l log φ_{y_i} + (1 − λ_l) log φ_{y_j}]; rowbuf[t], colbuf[t] (B, P·M) += its gradient's row and column
    sums (to H_i and H_j of the block pair blk_i[t % nbp], blk_j[t % nbp]).

    HL, HR (E, L, N, P·M) float64: λ_l H and (1 − λ_l) H, the reference's own products (f32: computed in float32,
    whose sum z_ij is rounded to float32 as the reference's), so z_ij is the same number.
    cls, val (M, R): the nonzeros of the read-out A row by row (R = most per row; padding has val 0).
    The activation is ReLU~ with q = u^{n_pow} (n_pow >= 1, by squaring; n_pow == 0: α = 1, the step; n_pow < 0:
    u^{e_pow}), u = clamp(z, 0, ρ)/ρ; alpha == 0 means the identity (a linear model: HL, HR are logits already)."""
    E, L, N, PM = HL.shape
    P = mult.shape[0]
    M = PM // P
    R = cls.shape[1]
    nbp = blk_i.shape[0]
    T = E * nbp
    linear = alpha == 0.0
    ra = 0.0 if linear else rho / alpha
    for t in range(first, T, stride):
        e = t // nbp
        bp = t - e * nbp
        i0 = blk_i[bp] * B
        j0 = blk_j[bp] * B
        i1 = min(i0 + B, N)
        j1 = min(j0 + B, N)
        z = np.empty(PM)
        u = np.empty(PM)
        q = np.empty(PM)
        b = np.empty(PM)
        a = np.empty(PM)
        racc = np.empty(PM)
        s = np.empty(M)
        dS = np.empty(M)
        g = np.empty(k)
        G = np.empty(k)
        acc = 0.0
        for l in range(L):
            lm = float(lam[e, l])
            wl = float(wts[l])
            for i in range(i0, i1):
                yi = y[e, i]
                hl = HL[e, l, i]
                racc[:] = 0.0
                for j in range(max(j0, i) if symmetric else j0, j1):
                    yj = y[e, j]
                    hr = HR[e, l, j]
                    w = (2.0 if symmetric and j > i else 1.0) * wl
                    # z = λH_i + (1 − λ)H_j (f32: the float32 sum the reference forms, exact in float64, rounded)
                    if not linear and 1 <= n_pow <= 3:  # α ∈ {2, 3, 4}: one merged pass, nothing stored but q
                        for m in range(M):
                            s[m] = 0.0
                        for p in range(P):
                            mp = mult[p]
                            for m in range(M):
                                x = p * M + m
                                zz = hl[x] + hr[x]
                                if f32:
                                    zz = np.float64(np.float32(zz))
                                uu = min(max(zz, 0.0), rho) / rho
                                qq = uu if n_pow == 1 else (uu * uu if n_pow == 2 else uu * (uu * uu))  # by squaring
                                s[m] += mp * (max(zz - rho, 0.0) + ra * uu * qq)
                                q[x] = mp * qq
                    else:  # the general passes
                        if f32:
                            for x in range(PM):
                                z[x] = np.float32(hl[x] + hr[x])
                        else:
                            for x in range(PM):
                                z[x] = hl[x] + hr[x]
                        if linear:  # identity: a = z, a' = 1
                            q[:] = 1.0
                            a[:] = z
                        else:  # ReLU~ (Def 4.2): u = clamp(z, 0, ρ)/ρ, q = ReLU~' = u^{α−1}, a = (z − ρ)_+ + (ρ/α) u q
                            for x in range(PM):
                                zc = z[x] if z[x] > 0.0 else 0.0
                                u[x] = (zc if zc < rho else rho) / rho
                            if n_pow > 0:  # by squaring, as the reference (each pass one vector loop)
                                b[:] = u
                                q[:] = 1.0
                                n = n_pow
                                while n:
                                    if n & 1:
                                        for x in range(PM):
                                            q[x] *= b[x]
                                    n >>= 1
                                    if n:
                                        for x in range(PM):
                                            b[x] *= b[x]
                            elif n_pow == 0:  # α = 1: ReLU~' is the step
                                for x in range(PM):
                                    q[x] = 1.0 if z[x] > 0.0 else 0.0
                            else:
                                for x in range(PM):
                                    q[x] = u[x] ** e_pow
                            for x in range(PM):
                                zr = z[x] - rho
                                a[x] = (zr if zr > 0.0 else 0.0) + ra * u[x] * q[x]
                        # Eq. 4.1: s_m = Σ_p mult_p a_pm; q becomes mult_p ReLU~'(z_pm)
                        s[:] = 0.0
                        for p in range(P):
                            mp = mult[p]
                            ap = a[p * M:(p + 1) * M]
                            qp = q[p * M:(p + 1) * M]
                            for m in range(M):
                                s[m] += mp * ap[m]
                                qp[m] *= mp
                    g[:] = 0.0
                    if R == 1:  # a block read-out: sum each run of one class in a register (no store→load chain)
                        c = cls[0, 0]
                        gc = 0.0
                        for m in range(M):
                            if cls[m, 0] != c:
                                g[c] += gc
                                c = cls[m, 0]
                                gc = 0.0
                            gc += val[m, 0] * s[m]
                        g[c] += gc
                    else:
                        for m in range(M):
                            for r in range(R):
                                g[cls[m, r]] += val[m, r] * s[m]
                    mx = g[0]
                    for c in range(1, k):
                        mx = max(mx, g[c])
                    se = 0.0
                    for c in range(k):
                        G[c] = math.exp(g[c] - mx)
                        se += G[c]
                    lse = mx + math.log(se)
                    acc += w * (lm * (g[yi] - lse) + (1.0 - lm) * (g[yj] - lse))
                    if not need:
                        continue
                    # ∂/∂g = w(λe_{y_i} + (1 − λ)e_{y_j} − φ) (Eq. A.10), then ∂/∂z = (∂/∂g Aᵀ)_m mult_p ReLU~'(z_pm)
                    for c in range(k):
                        G[c] *= -w / se
                    G[yi] += lm * w
                    G[yj] += (1.0 - lm) * w
                    for m in range(M):
                        sm = 0.0
                        for r in range(R):
                            sm += val[m, r] * G[cls[m, r]]
                        dS[m] = sm
                    cb = colbuf[t, j - j0]
                    lr = 1.0 - lm
                    for p in range(P):
                        base = p * M
                        for m in range(M):
                            dz = dS[m] * q[base + m]
                            racc[base + m] += lm * dz
                            cb[base + m] += lr * dz
                if need:
                    ro = rowbuf[t, i - i0]
                    for x in range(PM):
                        ro[x] += racc[x]
        tot[t] = acc


def reduce_tasks(blk_i, blk_j, B, tot, rowbuf, colbuf, need, total, dH):
    """total (E,) and dH (E, N, P·M) += the tasks' buffers, in the tasks' order (the same sums for any threads)."""
    N = dH.shape[1]
    PM = dH.shape[2]
    nbp = blk_i.shape[0]
    for e in range(total.shape[0]):
        for t in range(e * nbp, (e + 1) * nbp):
            total[e] += tot[t]
            if need:
                i0 = blk_i[t - e * nbp] * B
                j0 = blk_j[t - e * nbp] * B
                for ii in range(min(B, N - i0)):
                    for x in range(PM):
                        dH[e, i0 + ii, x] += rowbuf[t, ii, x]
                for jj in range(min(B, N - j0)):
                    for x in range(PM):
                        dH[e, j0 + jj, x] += colbuf[t, jj, x]
