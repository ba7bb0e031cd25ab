"""PyTorch peer: the CPU cost of ONE TRAINING STEP per run for each energy-model recipe on 2-D tasks.

What a competent researcher writes to train R independent energy models at once on CPU, to set
beside jemcheck's fused Go kernels (issue 21, point 6). Self-contained: numpy + torch, one thread.

Shared set-up, the same for every method:
  - task: per run a random 2-D Gaussian mixture (K classes x C isotropic components, means in
    +-0.7*box, sds in [0.3, 0.8], Dirichlet weights); 2000 draws per run, batch 64 per run;
  - model: MLP 2-32-32-K, tanh hidden layers (jemcheck's), parameters stacked [R, ...] and applied
    with torch.bmm over the R runs; every chain/walker/point of every run is one row of the batch,
    no Python loop over runs or chains in a step;
  - E(x) = logsumexp_y f(x)[y] (unnormalised log q(x)); the loss is summed over runs of the per-run
    mean losses, so each run's gradient is that of its own loss; Adam lr 3e-3;
  - parameter gradients by autograd (one backward per step); grad_x E by torch.autograd.grad with
    the parameters detached (samplers need no parameter gradients).

Methods (one training step each; "pass" = one forward + grad_x over 64 points per run):
  sgld       JEM as the paper: replay buffer 10000/run, 64 slots drawn (randint, as the official
             code), 5% uniform restarts on [-box, box]^2, 20 steps x += 1*grad E + 0.01*xi, write back;
             loss CE + (mean E(neg) - mean E(data)).                                  20 passes
  mala       same buffer/restarts; 20 Metropolis-adjusted Langevin steps at temperature 1, proposals
             outside the box rejected, per-chain accept/reject; eta per run, after each training
             step log eta += 0.05*(acceptance - 0.574), eta0 = 0.01.                   21 passes
  jarzynski  64 persistent weighted walkers/run (Carbone et al. 2023): A += E_new - E_old after each
             update, 20 ULA steps adding the MH log-ratio to A (leaving the box: A = -inf),
             systematic resampling when ESS < 0.5*64 (then A = 0); negatives weighted by softmax(A).
             (Killing walkers that leave the box leaves the backward kernels unnormalised near the
             edge, so the weighted walkers under-represent mass within a few sqrt(2 eta) of it.)
                                                                                       21 passes
  ed         Energy Discrepancy (Schroeder et al. 2023), sampler-free: y = x + sqrt(t) xi,
             x'_j = y + sqrt(t) xi_j (M = 4, t = 1), loss CE + mean_i log(w/M + 1/M sum_j
             exp(E(x'_ij) - E(x_i))), w = 1; one forward/backward over 64*(1+M) points.  0 passes
  shortrun   64 fresh uniform points/step, 20 steps x += eta grad E + sqrt(2 eta) xi (eta 0.01;
             --shortrun_noise none: no noise); loss CE + (mean E(neg) - mean E(data))
             + alpha (mean E(data)^2 + mean E(neg)^2), alpha = 1.                       20 passes
  jem        exact: log Z by a Riemann sum on a 32x32 grid of cell midpoints over the box;
             loss CE + (log Z - mean E(data)); forward/backward over 1024 grid points.  0 passes

The recipes that live in their own packages (methods/<name>; each package's doc.go is the
reference, BenchmarkRecipes2D in methods/all/bench_test.go the Go side), at their defaults:
  nce        noise-contrastive estimation: the noise a Gaussian with the mean and full covariance of
             the run's 2000 draws; nu = 10 draws per data point; G(u) = E(u) - c - log(nu pn(u)), loss
             CE + (1/B)[sum_data softplus(-G) + sum_noise softplus(G)]; c a learned scalar per run
             (Adam), set at the first step to log mean exp(E(y) - log pn(y)) over its noise draws
             (one extra forward). One forward/backward over 64*(1+nu) points.            0 passes
  tre        telescoping ratio estimation, one energy shared by m = 4 bridges: waymarks
             x_k = sqrt(1-a_k^2) x_0 + a_k eps, a_k = k/m, eps from the same Gaussian noise as nce;
             bridge k's log ratio r_k = s_k (E - c - log pn) + d_k, s = softmax(theta), d_{m-1} =
             -sum d_0..d_{m-2}; loss CE + (1/B) sum_k sum_i softplus(-r_k(x_k,i)) + softplus(r_k(x_k+1,i));
             2m learned scalars (c, theta, d) per run, c set as nce's.  64*(m+1) points. 0 passes
  dsm        denoising score matching by central differences: x~ = x + sigma eps (sigma 0.2), lanes
             x~ +- h e_d (h = 0.25 sigma), s_d = (E(x~+h e_d) - E(x~-h e_d))/(2h); loss CE +
             1/2 mean_i ||sigma s(x~_i) + eps_i||^2.  One forward/backward over 64*5 points. 0 passes
  snl        self-normalised likelihood: N = 4 proposal draws per data point from a diagonal Gaussian
             fitted to the run's draws (sd (n-1) at least 0.05 box, times 1.5), truncated to the box
             (inverse CDF), mixed with 10% uniform on the box; loss CE - mean E(data) +
             exp(logmeanexp(E(u) - log r(u)) - b) + b - 1; b a learned scalar per run set at the first
             step to the IS log Z-hat (one extra forward).  64*5 points.                 0 passes
  drl        diffusion recovery likelihood at one level: x~ = x + sigma eps (sigma 0.5), chains from
             y = x~, 30 MALA steps on log q(y|x~) = E(y) - ||y - x~||^2/(2 sigma^2) with s^2 = 0.5
             sigma^2 (y' = y + s^2/2 grad log q + s xi; proposals outside the box rejected); loss CE +
             (mean E(neg) - mean E(data)).                                              31 passes

Prints per method a comment line and a CSV line method,runs,steps,ms_per_run_step where
ms_per_run_step = 1000 * CPU seconds (time.process_time) / (runs * steps), after --warmup steps.

  OMP_NUM_THREADS=1 taskset -c 0 /usr/bin/python3 scripts/peers/torch_methods.py --runs 256 --steps 30
Setup: apt-get install -y python3-torch python3-numpy
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

ALL = ["sgld", "mala", "jarzynski", "ed", "shortrun", "jem", "nce", "tre", "dsm", "snl", "drl"]


def tasks(rng, R, K, C, box, n):
    """R random 2-D mixtures, n draws each, vectorised: X [R, n, 2] float32, Y [R, n] int64."""
    KC = K * C
    mu = rng.uniform(-0.7 * box, 0.7 * box, size=(R, KC, 2))
    sd = rng.uniform(0.3, 0.8, size=(R, KC))
    g = rng.gamma(1.0, size=(R, KC))
    cdf = np.cumsum(g / g.sum(1, keepdims=True), 1)
    cdf[:, -1] = 1.0
    comp = (rng.uniform(size=(R, n, 1)) > cdf[:, None, :]).sum(-1)          # [R, n] component
    r = np.arange(R)[:, None]
    x = mu[r, comp] + sd[r, comp][..., None] * rng.standard_normal((R, n, 2))
    y = comp // C
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64)


class Model:
    """R stacked MLPs 2 -> H -> H -> K, tanh hidden layers."""

    def __init__(self, R, H, K):
        def init(i, o):
            return ((torch.randn(R, i, o) / math.sqrt(i)).requires_grad_(),
                    torch.zeros(R, 1, o, requires_grad=True))
        self.params = [*init(2, H), *init(H, H), *init(H, K)]

    @staticmethod
    def logits_with(p, x):                    # x [R, m, 2] (or [1, m, 2]: shared points) -> [R, m, K]
        W1, b1, W2, b2, W3, b3 = p
        h = torch.tanh(torch.matmul(x, W1) + b1)
        h = torch.tanh(torch.bmm(h, W2) + b2)
        return torch.bmm(h, W3) + b3

    def logits(self, x):
        return self.logits_with(self.params, x)

    def energy_grad(self, x):
        """E(x) [R, m] and grad_x E [R, m, 2] at the current parameters, no parameter graph kept."""
        p = [t.detach() for t in self.params]
        x = x.detach().requires_grad_()
        e = torch.logsumexp(self.logits_with(p, x), -1)
        g, = torch.autograd.grad(e.sum(), x)
        return e.detach(), g


def uniform(box, *shape):
    return (torch.rand(*shape, 2) * 2 - 1) * box


def inbox(x, box):
    return (x.abs() <= box).all(-1)


def log_q_ratio(x, xp, g, gp, eta):
    """log N(x | x' + eta g', 2 eta I) - log N(x' | x + eta g, 2 eta I) (constants cancel); [R, m]."""
    fwd = ((xp - x - eta * g) ** 2).sum(-1)
    bwd = ((x - xp - eta * gp) ** 2).sum(-1)
    return (fwd - bwd) / (4 * eta[..., 0])


class Trainer:
    def __init__(self, a, method, X, Y):
        self.a, self.method, self.X, self.Y = a, method, X, Y
        R, B = a.runs, a.batch
        self.R, self.B, self.K = R, B, a.k
        self.model = Model(R, a.hidden, a.k)
        self.opt = torch.optim.Adam(self.model.params, lr=a.lr)
        self.ridx = torch.arange(R)[:, None]
        self.stats = {}
        box = a.box
        if method in ("sgld", "mala"):
            self.buf = uniform(box, R, a.buffer)
        if method == "mala":
            self.log_eta = torch.full((R, 1, 1), math.log(a.eta))
            self.acc_sum, self.acc_n = 0.0, 0
        if method == "jarzynski":
            self.walk = uniform(box, R, B)
            e, _ = self.model.energy_grad(self.walk)
            self.A = e.clone()                # importance weights of uniform draws for e^E
            self.e_old = e                    # E_theta(walkers) at the parameters of the last loss
            self.resamples = 0
        if method == "jem":
            c = (torch.arange(a.grid, dtype=torch.float32) + 0.5) / a.grid * 2 * box - box
            gx, gy = torch.meshgrid(c, c, indexing="ij")
            self.grid = torch.stack([gx.reshape(-1), gy.reshape(-1)], -1)[None]   # [1, G*G, 2]
            self.log_cell = 2 * math.log(2 * box / a.grid)
        if method in ("nce", "tre", "snl"):
            n_extra = {"nce": 1, "tre": 2 * a.tre_m, "snl": 1}[method]
            self.extra = torch.zeros(R, n_extra, requires_grad=True)    # learned scalars per run
            self.opt.add_param_group({"params": [self.extra]})
            self.first = True
        if method in ("nce", "tre"):
            # the Gaussian of each run's draws' mean and (ML) covariance, times inflate
            x = X.double()
            mean = x.mean(1)                                            # [R, 2]
            d = x - mean[:, None]
            cov = d.transpose(1, 2) @ d / x.shape[1] * (a.nce_inflate if method == "nce" else a.tre_inflate)
            L = torch.linalg.cholesky(cov)                              # [R, 2, 2]
            self.n_mean, self.n_l = mean.float()[:, None, :], L.float()
            self.n_lognorm = (math.log(2 * math.pi) + torch.log(L[:, 0, 0]) + torch.log(L[:, 1, 1])).float()[:, None]
        if method == "snl":
            # diagonal Gaussian of the draws, sd (n-1) at least 0.05 box, times 1.5; its mass in the box
            x = X.double()
            mu = x.mean(1)
            sd = torch.clamp(x.std(1), min=0.05 * box) * 1.5
            lo, hi = torch.special.ndtr((-box - mu) / sd), torch.special.ndtr((box - mu) / sd)
            self.p_mu, self.p_sd = mu.float()[:, None, :], sd.float()[:, None, :]
            self.p_lo, self.p_hi = lo.float()[:, None, :], hi.float()[:, None, :]
            self.p_const = (-torch.log(sd) - 0.5 * math.log(2 * math.pi) - torch.log(hi - lo)).sum(-1).float()[:, None]

    # ---- negatives -------------------------------------------------------------------------
    def buffer_draw(self):
        a = self.a
        idx = torch.randint(0, a.buffer, (self.R, self.B))
        x = self.buf[self.ridx, idx]
        fresh = torch.rand(self.R, self.B, 1) < a.reinit
        return idx, torch.where(fresh, uniform(a.box, self.R, self.B), x)

    def neg_sgld(self):
        a = self.a
        idx, x = self.buffer_draw()
        for _ in range(a.sgld_steps):
            _, g = self.model.energy_grad(x)
            x = x + a.sgld_lr * g + a.sgld_std * torch.randn_like(x)
        self.buf[self.ridx, idx] = x
        return x

    def neg_mala(self):
        a = self.a
        idx, x = self.buffer_draw()
        eta = self.log_eta.exp()              # [R, 1, 1]
        s = (2 * eta).sqrt()
        e, g = self.model.energy_grad(x)
        acc = torch.zeros(self.R)
        for _ in range(a.sgld_steps):
            xp = x + eta * g + s * torch.randn_like(x)
            ep, gp = self.model.energy_grad(xp)
            log_alpha = ep - e + log_q_ratio(x, xp, g, gp, eta)
            log_alpha = torch.where(inbox(xp, a.box), log_alpha, torch.full_like(log_alpha, -math.inf))
            ok = torch.rand_like(log_alpha).log() < log_alpha       # [R, B]
            x = torch.where(ok[..., None], xp, x)
            g = torch.where(ok[..., None], gp, g)
            e = torch.where(ok, ep, e)
            acc += ok.float().mean(1)
        self.buf[self.ridx, idx] = x
        self.acc = acc / a.sgld_steps         # per run, for the eta update after the step
        return x

    def neg_jarzynski(self):
        a = self.a
        eta = torch.full((self.R, 1, 1), a.ula_eta)
        s = (2 * eta).sqrt()
        x, A = self.walk, self.A
        e, g = self.model.energy_grad(x)      # E_new at the walkers
        A = A + e - self.e_old                # (a) the parameter update's work
        for _ in range(a.sgld_steps):         # (b) ULA, weights carry the MH log-ratio
            xp = x + eta * g + s * torch.randn_like(x)
            ep, gp = self.model.energy_grad(xp)
            A = A + ep - e + log_q_ratio(x, xp, g, gp, eta)
            A = torch.where(inbox(xp, a.box), A, torch.full_like(A, -math.inf))
            x, e, g = xp, ep, gp
        # (c) systematic resampling of runs whose ESS < 0.5 * walkers
        lse = torch.logsumexp(A, 1, keepdim=True)
        ess = torch.exp(2 * lse[:, 0] - torch.logsumexp(2 * A, 1))
        dead = ~torch.isfinite(lse[:, 0])     # every walker left the box: uniform weights
        low = (ess < a.ess * self.B) | dead
        if bool(low.any()):
            w = torch.where(dead[:, None], torch.full_like(A, 1.0 / self.B), torch.exp(A - lse))
            cdf = w.cumsum(1)
            u = (torch.rand(self.R, 1) + torch.arange(self.B)) / self.B
            j = torch.searchsorted(cdf, u).clamp_(max=self.B - 1)
            x = torch.where(low[:, None, None], x[self.ridx, j], x)
            A = torch.where(low[:, None], torch.zeros_like(A), A)
            self.resamples += int(low.sum())
        self.walk, self.A = x, A
        return x

    def neg_shortrun(self):
        a = self.a
        x = uniform(a.box, self.R, self.B)
        s = math.sqrt(2 * a.eta)
        for _ in range(a.sgld_steps):
            _, g = self.model.energy_grad(x)
            x = x + a.eta * g
            if a.shortrun_noise == "gauss":
                x = x + s * torch.randn_like(x)
        return x

    # ---- the recipes of methods/<name> -----------------------------------------------------
    def noise_log_pdf(self, x):
        """log N(x | mean, L L^T) of each run's Gaussian noise (nce, tre); x [R, m, 2] -> [R, m]."""
        L = self.n_l
        y0 = (x[..., 0] - self.n_mean[..., 0]) / L[:, None, 0, 0]
        y1 = (x[..., 1] - self.n_mean[..., 1] - L[:, None, 1, 0] * y0) / L[:, None, 1, 1]
        return -0.5 * (y0 * y0 + y1 * y1) - self.n_lognorm

    def noise_draw(self, m):
        """m draws of each run's Gaussian noise: [R, m, 2]."""
        z = torch.randn(self.R, m, 2)
        return self.n_mean + z @ self.n_l.transpose(1, 2)

    def init_log_z(self, e, log_r):
        """the initial model's importance-sampling log Z-hat: log mean exp(E - log r) per run [R]."""
        return torch.logsumexp(e - log_r, 1) - math.log(e.shape[1])

    def snl_draw(self, m):
        """m draws per run of the defensive mixture (10% uniform on the box, 90% the truncated
        Gaussian) and their log density log r [R, m]."""
        box = self.a.box
        u = torch.rand(self.R, m, 2)
        t = self.p_lo + u * (self.p_hi - self.p_lo)
        g = (self.p_mu + self.p_sd * math.sqrt(2) * torch.erfinv(2 * t - 1)).clamp(-box, box)
        x = torch.where(torch.rand(self.R, m, 1) < self.a.snl_defensive, uniform(box, self.R, m), g)
        z = (x - self.p_mu) / self.p_sd
        lg = -0.5 * (z * z).sum(-1) + self.p_const
        log_u = -math.log(4 * box * box)
        log_r = torch.logaddexp(torch.full_like(lg, math.log(self.a.snl_defensive) + log_u),
                                math.log(1 - self.a.snl_defensive) + lg)
        return x, log_r

    def neg_drl(self, xb):
        """each data point's negative: 30 MALA steps on q(y|x~) from y = x~ = x + sigma eps."""
        a = self.a
        sig2 = a.drl_sigma ** 2
        s2 = a.drl_b2 * sig2
        s = math.sqrt(s2)
        xt = xb + a.drl_sigma * torch.randn_like(xb)
        y = xt
        e, g = self.model.energy_grad(y)
        for _ in range(a.drl_steps):
            fwd = y + 0.5 * s2 * (g - (y - xt) / sig2)
            yp = fwd + s * torch.randn_like(y)
            ep, gp = self.model.energy_grad(yp)
            bwd = yp + 0.5 * s2 * (gp - (yp - xt) / sig2)
            qf = ((yp - fwd) ** 2).sum(-1)
            qb = ((y - bwd) ** 2).sum(-1)
            log_alpha = (ep - ((yp - xt) ** 2).sum(-1) / (2 * sig2)) - (e - ((y - xt) ** 2).sum(-1) / (2 * sig2)) \
                - (qb - qf) / (2 * s2)
            ok = (torch.rand_like(log_alpha).log() < log_alpha) & inbox(yp, a.box) & torch.isfinite(ep)
            y = torch.where(ok[..., None], yp, y)
            g = torch.where(ok[..., None], gp, g)
            e = torch.where(ok, ep, e)
        return y

    def loss_new(self, xb, ce_of):
        """the per-run loss of nce, tre, dsm, snl, drl (CE + w * the method's loss) [R]."""
        a, R, B, m, meth = self.a, self.R, self.B, self.model, self.method
        if meth == "nce":
            nu = a.nce_nu
            xn = self.noise_draw(nu * B)
            x = torch.cat([xb, xn], 1)
            lpn = math.log(nu) + self.noise_log_pdf(x)                # log(nu pn) per lane
            if self.first:
                with torch.no_grad():
                    en = torch.logsumexp(m.logits(xn), -1)
                    self.extra[:, 0] = self.init_log_z(en, lpn[:, B:] - math.log(nu))
                self.first = False
            f = m.logits(x)
            G = torch.logsumexp(f, -1) - self.extra[:, :1] - lpn
            l_px = (F.softplus(-G[:, :B]).sum(1) + F.softplus(G[:, B:]).sum(1)) / B
        elif meth == "tre":
            M = a.tre_m
            eps = self.noise_draw(B)
            al = torch.arange(M + 1, dtype=torch.float32) / M            # waymark k's alpha
            x = (torch.sqrt(1 - al * al)[None, :, None, None] * xb[:, None]
                 + al[None, :, None, None] * eps[:, None]).reshape(R, (M + 1) * B, 2)
            lpn = self.noise_log_pdf(x)
            if self.first:
                with torch.no_grad():
                    en = torch.logsumexp(m.logits(eps), -1)
                    self.extra[:, 0] = self.init_log_z(en, lpn[:, M * B:])
                self.first = False
            f = m.logits(x)
            r = (torch.logsumexp(f, -1) - self.extra[:, :1] - lpn).view(R, M + 1, B)
            share = torch.softmax(self.extra[:, 1:1 + M], 1)[..., None]      # [R, M, 1]
            d = self.extra[:, 1 + M:]
            off = torch.cat([d, -d.sum(1, keepdim=True)], 1)[..., None]     # [R, M, 1]
            gu = share * r[:, :M] + off                                       # bridge k at waymark k
            gv = share * r[:, 1:] + off                                       # ... and at waymark k+1
            l_px = (F.softplus(-gu) + F.softplus(gv)).sum((1, 2)) / B
        elif meth == "dsm":
            sigma, h = a.dsm_sigma, a.dsm_h * a.dsm_sigma
            eps = torch.randn(R, B, 2)
            xt = xb + sigma * eps
            dx = torch.tensor([[h, 0.0], [-h, 0.0], [0.0, h], [0.0, -h]])
            x = torch.cat([xb, (xt[:, None] + dx[None, :, None]).reshape(R, 4 * B, 2)], 1)
            f = m.logits(x)
            e = torch.logsumexp(f[:, B:], -1).view(R, 2, 2, B)              # [R, axis, +/-, B]
            res = sigma / (2 * h) * (e[:, :, 0] - e[:, :, 1]) + eps.permute(0, 2, 1)
            l_px = 0.5 * (res * res).sum((1, 2)) / B
        elif meth == "snl":
            xu, log_r = self.snl_draw(a.snl_n * B)
            if self.first:
                with torch.no_grad():
                    self.extra[:, 0] = self.init_log_z(torch.logsumexp(m.logits(xu), -1), log_r)
                self.first = False
            b = self.extra[:, 0]
            f = m.logits(torch.cat([xb, xu], 1))
            e = torch.logsumexp(f, -1)
            log_z = torch.logsumexp(e[:, B:] - log_r, 1) - math.log(a.snl_n * B)
            l_px = -e[:, :B].mean(1) + torch.exp(log_z - b) + b - 1
        elif meth == "drl":
            xn = self.neg_drl(xb).detach()
            f = m.logits(torch.cat([xb, xn], 1))
            e = torch.logsumexp(f, -1)
            l_px = e[:, B:].mean(1) - e[:, :B].mean(1)
        else:
            raise ValueError(meth)
        return ce_of(f[:, :B]) + a.w * l_px

    # ---- one training step ----------------------------------------------------------------
    def step(self):
        a, R, B, K, m = self.a, self.R, self.B, self.K, self.model
        bi = torch.randint(0, self.X.shape[1], (R, B))
        xb, yb = self.X[self.ridx, bi], self.Y[self.ridx, bi]
        meth = self.method

        def ce_of(f_data):
            return F.cross_entropy(f_data.reshape(-1, K), yb.reshape(-1), reduction="none").view(R, B).mean(1)

        if meth in ("sgld", "mala", "jarzynski", "shortrun"):
            xn = getattr(self, "neg_" + meth)().detach()
            f = m.logits(torch.cat([xb, xn], 1))                  # one forward over data + negatives
            e = torch.logsumexp(f, -1)
            ed, en = e[:, :B], e[:, B:]
            if meth == "jarzynski":
                en_term = (torch.softmax(self.A, 1) * en).sum(1)
                self.e_old = en.detach()                         # E_old(walkers) for the next step
            else:
                en_term = en.mean(1)
            loss_r = ce_of(f[:, :B]) + a.w * (en_term - ed.mean(1))
            if meth == "shortrun":
                loss_r = loss_r + a.alpha * ((ed ** 2).mean(1) + (en ** 2).mean(1))
        elif meth == "ed":
            M, st = a.ed_m, math.sqrt(a.ed_t)
            yv = xb + st * torch.randn_like(xb)
            xp = yv[:, :, None, :] + st * torch.randn(R, B, M, 2)  # [R, B, M, 2]
            f = m.logits(torch.cat([xb, xp.reshape(R, B * M, 2)], 1))
            e = torch.logsumexp(f, -1)
            ed, ep = e[:, :B], e[:, B:].view(R, B, M)
            # log(w/M + 1/M sum_j exp(U(x) - U(x'_j))), U = -E
            terms = torch.cat([torch.full((R, B, 1), math.log(a.ed_w)), ep - ed[..., None]], -1)
            loss_r = ce_of(f[:, :B]) + (torch.logsumexp(terms, -1) - math.log(M)).mean(1)
        elif meth == "jem":
            fd = m.logits(xb)
            eg = torch.logsumexp(m.logits(self.grid), -1)           # [R, G*G]
            log_z = torch.logsumexp(eg, 1) + self.log_cell
            loss_r = ce_of(fd) + a.w * (log_z - torch.logsumexp(fd, -1).mean(1))
        else:
            loss_r = self.loss_new(xb, ce_of)

        loss = loss_r.sum()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        if meth == "mala":
            self.log_eta += a.eta_rate * (self.acc - a.target_acc)[:, None, None]
            self.acc_sum += float(self.acc.mean())
            self.acc_n += 1
        return float(loss) / R


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default=",".join(ALL), help="comma list of " + ",".join(ALL))
    ap.add_argument("--runs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30, help="training steps timed")
    ap.add_argument("--warmup", type=int, default=5, help="training steps before timing")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--k", type=int, default=3, help="classes")
    ap.add_argument("--box", type=float, default=5.0)
    ap.add_argument("--components", type=int, default=2, help="mixture components per class")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--n", type=int, default=2000, help="draws per task")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--w", type=float, default=1.0, help="weight of the generative term")
    ap.add_argument("--sgld_steps", type=int, default=20, help="sampler steps (sgld, mala, jarzynski, shortrun)")
    ap.add_argument("--sgld_lr", type=float, default=1.0)
    ap.add_argument("--sgld_std", type=float, default=0.01)
    ap.add_argument("--buffer", type=int, default=10000)
    ap.add_argument("--reinit", type=float, default=0.05)
    ap.add_argument("--eta", type=float, default=0.01, help="mala initial / shortrun Langevin step")
    ap.add_argument("--eta_rate", type=float, default=0.05)
    ap.add_argument("--target_acc", type=float, default=0.574)
    ap.add_argument("--ula_eta", type=float, default=0.01, help="jarzynski ULA step")
    ap.add_argument("--ess", type=float, default=0.5, help="jarzynski resampling threshold / walkers")
    ap.add_argument("--ed_m", type=int, default=4)
    ap.add_argument("--ed_t", type=float, default=1.0)
    ap.add_argument("--ed_w", type=float, default=1.0)
    ap.add_argument("--alpha", type=float, default=1.0, help="shortrun energy-magnitude penalty")
    ap.add_argument("--shortrun_noise", choices=["gauss", "none"], default="gauss")
    ap.add_argument("--grid", type=int, default=32, help="jem: grid points per axis")
    ap.add_argument("--nce_nu", type=int, default=10, help="nce: noise draws per data point")
    ap.add_argument("--nce_inflate", type=float, default=1.0, help="nce: factor on the noise's covariance")
    ap.add_argument("--tre_m", type=int, default=4, help="tre: bridges (waymarks 0..m)")
    ap.add_argument("--tre_inflate", type=float, default=1.0, help="tre: factor on the noise's covariance")
    ap.add_argument("--dsm_sigma", type=float, default=0.2, help="dsm: perturbation sd")
    ap.add_argument("--dsm_h", type=float, default=0.25, help="dsm: finite-difference step / sigma")
    ap.add_argument("--snl_n", type=int, default=4, help="snl: proposal draws per data point")
    ap.add_argument("--snl_defensive", type=float, default=0.1, help="snl: the proposal's uniform share")
    ap.add_argument("--drl_sigma", type=float, default=0.5, help="drl: noise level")
    ap.add_argument("--drl_steps", type=int, default=30, help="drl: MALA steps on q(x|x~)")
    ap.add_argument("--drl_b2", type=float, default=0.5, help="drl: Langevin step s^2 = b2 sigma^2")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    methods = [s.strip() for s in a.methods.split(",") if s.strip()]
    for s in methods:
        if s not in ALL:
            ap.error(f"unknown method {s!r} (have {','.join(ALL)})")
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    X, Y = tasks(rng, a.runs, a.k, a.components, a.box, a.n)

    print("method,runs,steps,ms_per_run_step", flush=True)
    for meth in methods:
        torch.manual_seed(a.seed)
        t = Trainer(a, meth, X, Y)
        for _ in range(a.warmup):
            t.step()
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            loss = t.step()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        ms = 1000 * cpu / (a.runs * a.steps)
        extra = ""
        if meth == "mala":
            extra = f" acc={t.acc_sum / t.acc_n:.3f} eta_median={float(t.log_eta.exp().median()):.4f}"
        if meth == "jarzynski":
            extra = f" resamples_per_run_step={t.resamples / (a.runs * (a.steps + a.warmup)):.3f}"
        print(f"# {meth} runs={a.runs} steps={a.steps} warmup={a.warmup} threads={a.threads} "
              f"wall_s={wall:.2f} cpu_s={cpu:.2f} ms_cpu_per_run_step={ms:.4f} loss={loss:.3f}{extra}")
        print(f"{meth},{a.runs},{a.steps},{ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
