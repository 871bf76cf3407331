// ceres_arap: the ARAP deformation problem of pxl's mesh command, solved by
// Ceres (autodiff, Levenberg-Marquardt, SPARSE_NORMAL_CHOLESKY), as a peer to
// measure pxl against. Bench code: pxl neither builds nor links it (see
// bench/peers/build_ceres.sh, which builds it against Debian's libceres-dev).
//
//   ceres_arap FILE [--threads N] [--eval-reps R] [--max-iter N]
//       Reads the problem file written by `pxl mesh arap --export FILE`
//       ("pxl-arap 1"; format in the ARAP notes), builds one residual block of
//       3 per directed edge i->j over the parameter blocks p_i, p_j, w_i,
//           r = (p_i - p_j) - R(w_i) (q_i - q_j),
//       holds the handles' p constant, solves, then times R evaluations of
//       residuals + Jacobian at the solution through Problem::Evaluate. Prints
//       one JSON line.
//   ceres_arap --eval-random N [--threads N] [--eval-reps R] [--seed S]
//       Evaluates residuals + Jacobian (3 x 9 per instance) of N edge
//       instances with random data through the AutoDiffCostFunction's own
//       Evaluate, split over N threads; prints one JSON line with the median
//       seconds per evaluation of all N instances.
//
// R(w) is ceres::AngleAxisRotatePoint. It switches to the first-order form
// below theta^2 = DBL_EPSILON where the ARAP notes say 1e-12: the two agree to
// about 1e-12 relative in between, far below the solver's tolerances.
#include <ceres/ceres.h>
#include <ceres/rotation.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

// One directed edge: 3 residuals over p_i (3), p_j (3), w_i (3); rest edge
// d = q_i - q_j is the functor's constant.
struct ArapEdge {
  explicit ArapEdge(const double d[3]) : d_{d[0], d[1], d[2]} {}
  template <typename T>
  bool operator()(const T* pi, const T* pj, const T* wi, T* r) const {
    const T d[3] = {T(d_[0]), T(d_[1]), T(d_[2])};
    T rd[3];
    ceres::AngleAxisRotatePoint(wi, d, rd);
    r[0] = (pi[0] - pj[0]) - rd[0];
    r[1] = (pi[1] - pj[1]) - rd[1];
    r[2] = (pi[2] - pj[2]) - rd[2];
    return true;
  }
  double d_[3];
};

using EdgeCost = ceres::AutoDiffCostFunction<ArapEdge, 3, 3, 3, 3>;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "ceres_arap: %s\n", msg.c_str());
  std::exit(1);
}

// The problem file ("pxl-arap 1"), parsed from memory with line:column
// positions in its errors.
struct Arap {
  long long V = 0, E = 0, H = 0;
  std::vector<double> q;       // 3V rest positions
  std::vector<int> edges;      // 2E (i, j)
  std::vector<int> hv;         // H handle vertices
  std::vector<double> htarget; // 3H targets
};

class Reader {
 public:
  Reader(const char* p, size_t n, const std::string& name) : p_(p), end_(p + n), name_(name) {}
  // Skips blanks (not newlines); newline() consumes one line end.
  void blanks() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) adv();
  }
  void newline() {
    blanks();
    if (p_ >= end_) return;  // a missing final newline is fine
    if (*p_ != '\n') fail("expected end of line");
    adv();
  }
  std::string word() {
    blanks();
    const char* s = p_;
    while (p_ < end_ && !std::isspace(static_cast<unsigned char>(*p_))) adv();
    return std::string(s, p_);
  }
  long long integer(long long lo, long long hi, const char* what) {
    blanks();
    char buf[32];
    size_t k = 0;
    const char* s = p_;
    long line = line_, col = col_;
    while (p_ < end_ && k < sizeof buf - 1 && (std::isdigit(static_cast<unsigned char>(*p_)) || *p_ == '-' || *p_ == '+'))
      buf[k++] = *p_, adv();
    buf[k] = 0;
    if (k == 0) fail(std::string("expected an integer (") + what + ")");
    char* e = nullptr;
    errno = 0;
    long long v = std::strtoll(buf, &e, 10);
    if (*e || errno || v < lo || v > hi) {
      p_ = s, line_ = line, col_ = col;
      fail(std::string("bad ") + what + " '" + buf + "' (must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
    return v;
  }
  double real(const char* what) {
    blanks();
    const char* s = p_;
    long line = line_, col = col_;
    char buf[64];
    size_t k = 0;
    while (p_ < end_ && k < sizeof buf - 1 && !std::isspace(static_cast<unsigned char>(*p_))) buf[k++] = *p_, adv();
    buf[k] = 0;
    char* e = nullptr;
    errno = 0;
    double v = k ? std::strtod(buf, &e) : 0.0;
    if (!k || *e || errno == ERANGE || !std::isfinite(v)) {
      p_ = s, line_ = line, col_ = col;
      fail(std::string("expected a finite number (") + what + ")");
    }
    return v;
  }
  [[noreturn]] void fail(const std::string& msg) {
    die(name_ + ":" + std::to_string(line_) + ":" + std::to_string(col_) + ": " + msg);
  }

 private:
  void adv() {
    if (*p_ == '\n') line_++, col_ = 1;
    else col_++;
    p_++;
  }
  const char* p_;
  const char* end_;
  std::string name_;
  long line_ = 1, col_ = 1;
};

Arap read_arap(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die(path + ": " + std::strerror(errno));
  std::string buf;
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) buf.append(chunk, n);
  if (std::ferror(f)) die(path + ": read error");
  std::fclose(f);
  Reader r(buf.data(), buf.size(), path);
  Arap a;
  if (r.word() != "pxl-arap") r.fail("not a pxl-arap file (expected 'pxl-arap 1')");
  if (r.integer(1, 1, "version") != 1) r.fail("unsupported version");
  r.newline();
  const long long lim = 1LL << 28;
  a.V = r.integer(1, lim, "vertex count V");
  a.E = r.integer(0, lim, "directed edge count E");
  a.H = r.integer(0, a.V, "handle count H");
  r.newline();
  a.q.resize(3 * a.V);
  for (long long i = 0; i < a.V; i++) {
    for (int k = 0; k < 3; k++) a.q[3 * i + k] = r.real("rest position");
    r.newline();
  }
  a.edges.resize(2 * a.E);
  for (long long e = 0; e < a.E; e++) {
    a.edges[2 * e] = static_cast<int>(r.integer(0, a.V - 1, "edge vertex"));
    a.edges[2 * e + 1] = static_cast<int>(r.integer(0, a.V - 1, "edge vertex"));
    if (a.edges[2 * e] == a.edges[2 * e + 1]) r.fail("edge from a vertex to itself");
    r.newline();
  }
  a.hv.resize(a.H);
  a.htarget.resize(3 * a.H);
  for (long long h = 0; h < a.H; h++) {
    a.hv[h] = static_cast<int>(r.integer(0, a.V - 1, "handle vertex"));
    for (int k = 0; k < 3; k++) a.htarget[3 * h + k] = r.real("handle target");
    r.newline();
  }
  r.blanks();
  if (!r.word().empty()) r.fail("unexpected text after the handles");
  return a;
}

// Which BLAS this process loaded (from /proc/self/maps), for the record.
std::string blas_name() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return "unknown";
  char line[4096];
  std::string found;
  while (std::fgets(line, sizeof line, f)) {
    const char* s = std::strchr(line, '/');
    if (!s) continue;
    std::string p(s);
    while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
    size_t del = p.find(" (deleted)");
    if (del != std::string::npos) p.erase(del);
    std::string base = p.substr(p.rfind('/') + 1);
    if (base.find("openblas") != std::string::npos || base.find("libatlas") != std::string::npos ||
        base.find("libmkl") != std::string::npos || base.find("libblis") != std::string::npos ||
        base.rfind("libblas.so", 0) == 0) {
      if (found.find(p) == std::string::npos) found += (found.empty() ? "" : ",") + p;
    }
  }
  std::fclose(f);
  return found.empty() ? "unknown" : found;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --progress: one line per iteration on stdout, flushed at once (so that a run
// stopped by a time limit still shows how far it got), starting with '#'.
class Progress : public ceres::IterationCallback {
 public:
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& s) override {
    std::printf("# iter %3d cost %.9e change %+.3e |g| %.3e step %s radius %.3e iter_s %.4f linear_s %.4f total_s %.3f\n",
                s.iteration, s.cost, s.cost_change, s.gradient_max_norm, s.step_is_successful ? "ok " : "rej",
                s.trust_region_radius, s.iteration_time_in_seconds, s.step_solver_time_in_seconds,
                s.cumulative_time_in_seconds);
    std::fflush(stdout);
    return ceres::SOLVER_CONTINUE;
  }
};

int solve_mode(const std::string& path, int threads, int reps, int max_iter, bool progress) {
  double t0 = now_s();
  Arap a = read_arap(path);
  double t_read = now_s() - t0;

  // Parameters, vertex-major: x[6i+0..2] = p_i, x[6i+3..5] = w_i.
  std::vector<double> x(6 * a.V, 0.0);
  std::vector<char> is_handle(a.V, 0);
  for (long long i = 0; i < a.V; i++)
    for (int k = 0; k < 3; k++) x[6 * i + k] = a.q[3 * i + k];
  for (long long h = 0; h < a.H; h++) {
    if (is_handle[a.hv[h]]) die("vertex " + std::to_string(a.hv[h]) + " is a handle twice");
    is_handle[a.hv[h]] = 1;
    for (int k = 0; k < 3; k++) x[6 * a.hv[h] + k] = a.htarget[3 * h + k];
  }

  t0 = now_s();
  ceres::Problem problem;
  for (long long i = 0; i < a.V; i++) {
    problem.AddParameterBlock(&x[6 * i], 3);
    problem.AddParameterBlock(&x[6 * i + 3], 3);
  }
  for (long long e = 0; e < a.E; e++) {
    int i = a.edges[2 * e], j = a.edges[2 * e + 1];
    double d[3] = {a.q[3 * i] - a.q[3 * j], a.q[3 * i + 1] - a.q[3 * j + 1], a.q[3 * i + 2] - a.q[3 * j + 2]};
    problem.AddResidualBlock(new EdgeCost(new ArapEdge(d)), nullptr, &x[6 * i], &x[6 * j], &x[6 * i + 3]);
  }
  for (long long h = 0; h < a.H; h++) problem.SetParameterBlockConstant(&x[6 * a.hv[h]]);
  // A vertex with no outgoing edge leaves w_i out of every residual; Ceres
  // would drop it, but hold it constant so the counts stay plain.
  std::vector<char> has_out(a.V, 0);
  for (long long e = 0; e < a.E; e++) has_out[a.edges[2 * e]] = 1;
  for (long long i = 0; i < a.V; i++)
    if (!has_out[i]) problem.SetParameterBlockConstant(&x[6 * i + 3]);
  double t_build = now_s() - t0;

  ceres::Solver::Options opt;
  opt.minimizer_type = ceres::TRUST_REGION;
  opt.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
  opt.linear_solver_type = ceres::SPARSE_NORMAL_CHOLESKY;
  opt.sparse_linear_algebra_library_type = ceres::SUITE_SPARSE;
  opt.function_tolerance = 1e-6;
  opt.gradient_tolerance = 1e-10;
  opt.parameter_tolerance = 1e-8;
  opt.max_num_iterations = max_iter;
  opt.num_threads = threads;
  opt.logging_type = ceres::SILENT;
  opt.minimizer_progress_to_stdout = false;
  Progress cb;
  if (progress) opt.callbacks.push_back(&cb);
  std::string why;
  if (!opt.IsValid(&why)) die("solver options: " + why);

  // iterations: LM steps tried (Ceres' "Number of iterations", the length of
  // Summary::iterations less its iteration 0); minimizer_iterations: what
  // FullReport prints, successful + unsuccessful steps with iteration 0
  // counted as a successful one.
  ceres::Solver::Summary sum;
  ceres::Solve(opt, &problem, &sum);

  // Residuals + Jacobian at the solution, through the public evaluation call
  // (it also builds the evaluator and a CRS matrix each time: an upper bound
  // on Ceres' evaluation cost; jac_eval_s_per_call below is the solver's own).
  ceres::Problem::EvaluateOptions eo;
  eo.num_threads = threads;
  std::vector<double> times;
  double cost = 0;
  std::vector<double> res;
  ceres::CRSMatrix jac;
  bool eval_ok = true;
  for (int k = 0; k <= reps && eval_ok; k++) {
    double s = now_s();
    eval_ok = problem.Evaluate(eo, &cost, &res, nullptr, &jac);
    if (k > 0) times.push_back(now_s() - s);  // the first one warms up
  }

  const long long nconst = 3 * a.H;
  std::printf(
      "{\"peer\":\"ceres\",\"ceres\":%s,\"mode\":\"solve\",\"file\":%s,\"vertices\":%lld,\"directed_edges\":%lld,"
      "\"handles\":%lld,\"residuals\":%lld,\"parameters\":%lld,\"constant_parameters\":%lld,"
      "\"threads\":%d,\"threads_used\":%d,\"linear_solver\":\"SPARSE_NORMAL_CHOLESKY\",\"sparse_library\":\"SUITE_SPARSE\","
      "\"iterations\":%d,\"minimizer_iterations\":%d,\"successful_steps\":%d,\"unsuccessful_steps\":%d,"
      "\"initial_cost\":%.17g,\"final_cost\":%.17g,\"termination\":%s,\"message\":%s,"
      "\"total_s\":%.6f,\"preprocessor_s\":%.6f,\"minimizer_s\":%.6f,\"postprocessor_s\":%.6f,"
      "\"residual_eval_s\":%.6f,\"jacobian_eval_s\":%.6f,\"eval_s\":%.6f,\"linear_solver_s\":%.6f,"
      "\"num_residual_evaluations\":%d,\"num_jacobian_evaluations\":%d,\"jac_eval_s_per_call\":%.6f,"
      "\"evaluate_s_median\":%.6f,\"evaluate_reps\":%zu,\"evaluate_cost\":%.17g,\"jacobian_nnz\":%zu,"
      "\"read_s\":%.6f,\"build_s\":%.6f,\"blas\":%s}\n",
      json_str(CERES_VERSION_STRING).c_str(), json_str(path).c_str(), a.V, a.E, a.H, 3 * a.E, 6 * a.V, nconst,
      threads, sum.num_threads_used, static_cast<int>(sum.iterations.size()) - 1,
      sum.num_successful_steps + sum.num_unsuccessful_steps, sum.num_successful_steps,
      sum.num_unsuccessful_steps, sum.initial_cost, sum.final_cost,
      json_str(ceres::TerminationTypeToString(sum.termination_type)).c_str(), json_str(sum.message).c_str(),
      sum.total_time_in_seconds, sum.preprocessor_time_in_seconds, sum.minimizer_time_in_seconds,
      sum.postprocessor_time_in_seconds, sum.residual_evaluation_time_in_seconds,
      sum.jacobian_evaluation_time_in_seconds,
      sum.residual_evaluation_time_in_seconds + sum.jacobian_evaluation_time_in_seconds,
      sum.linear_solver_time_in_seconds, sum.num_residual_evaluations, sum.num_jacobian_evaluations,
      sum.num_jacobian_evaluations > 0 ? sum.jacobian_evaluation_time_in_seconds / sum.num_jacobian_evaluations : -1.0,
      eval_ok ? median(times) : -1.0, times.size(), cost, jac.values.size(), t_read, t_build, json_str(blas_name()).c_str());
  return sum.IsSolutionUsable() ? 0 : 2;
}

// splitmix64: reproducible uniform doubles for the random instances.
struct Rng {
  uint64_t s;
  double uni(double lo, double hi) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * (static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0));
  }
};

int eval_random_mode(long long n, int threads, int reps, uint64_t seed) {
  if (n < 1 || n > (1LL << 27)) die("--eval-random N must be in 1..2^27");
  // Inputs per instance: p_i, p_j, w_i (9 doubles); outputs 3 residuals and
  // the Jacobian as three 3x3 row-major blocks (27 doubles), as Ceres lays out.
  std::vector<double> par(9 * n), out_r(3 * n), out_j(27 * n, 0.0);
  std::vector<std::unique_ptr<ceres::CostFunction>> cf(n);
  Rng rng{seed};
  double t0 = now_s();
  for (long long k = 0; k < n; k++) {
    for (int c = 0; c < 6; c++) par[9 * k + c] = rng.uni(-1, 1);
    for (int c = 6; c < 9; c++) par[9 * k + c] = rng.uni(-1.5, 1.5);
    double d[3] = {rng.uni(-0.1, 0.1), rng.uni(-0.1, 0.1), rng.uni(-0.1, 0.1)};
    cf[k].reset(new EdgeCost(new ArapEdge(d)));
  }
  double t_setup = now_s() - t0;
  if (threads < 1) threads = 1;
  std::vector<int> fails(threads, 0);
  auto run_all = [&]() {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
      ts.emplace_back([&, t]() {
        long long lo = n * t / threads, hi = n * (t + 1) / threads;
        for (long long k = lo; k < hi; k++) {
          const double* p[3] = {&par[9 * k], &par[9 * k + 3], &par[9 * k + 6]};
          double* j[3] = {&out_j[27 * k], &out_j[27 * k + 9], &out_j[27 * k + 18]};
          if (!cf[k]->Evaluate(p, &out_r[3 * k], j)) fails[t]++;
        }
      });
    }
    for (auto& th : ts) th.join();
  };
  run_all();  // warm-up (first touch of the outputs)
  std::vector<double> times;
  for (int r = 0; r < reps; r++) {
    double s = now_s();
    run_all();
    times.push_back(now_s() - s);
  }
  long long nfail = 0;
  for (int f : fails) nfail += f;
  // A checksum so the work can't be skipped, and a sanity check of one
  // instance's dr/dp_i block (the identity).
  double sum = 0;
  for (long long k = 0; k < n; k++) sum += out_r[3 * k] + out_j[27 * k + 18];
  bool ident_ok = out_j[0] == 1 && out_j[4] == 1 && out_j[8] == 1 && out_j[1] == 0;
  double med = median(times);
  std::printf(
      "{\"peer\":\"ceres\",\"ceres\":%s,\"mode\":\"eval\",\"n\":%lld,\"threads\":%d,\"precision\":\"f64\","
      "\"reps\":%d,\"s_per_eval\":%.6f,\"s_min\":%.6f,\"instances_per_s\":%.4g,\"setup_s\":%.3f,"
      "\"failed\":%lld,\"jacobian_check\":%s,\"checksum\":%.17g}\n",
      json_str(CERES_VERSION_STRING).c_str(), n, threads, reps, med, *std::min_element(times.begin(), times.end()),
      n / med, t_setup, nfail, ident_ok ? "true" : "false", sum);
  return nfail == 0 && ident_ok ? 0 : 2;
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: ceres_arap FILE [--threads N] [--eval-reps R] [--max-iter N]\n"
               "       ceres_arap --eval-random N [--threads N] [--eval-reps R] [--seed S]\n"
               "Solves the pxl-arap problem FILE with Ceres %s (autodiff, LM, SPARSE_NORMAL_CHOLESKY), or\n"
               "times residuals+Jacobian of N random ARAP edge instances; prints one JSON line.\n",
               CERES_VERSION_STRING);
}

long long arg_int(int argc, char** argv, int& i, long long lo, long long hi) {
  if (i + 1 >= argc) die(std::string(argv[i]) + " needs a value");
  char* e = nullptr;
  errno = 0;
  long long v = std::strtoll(argv[i + 1], &e, 10);
  if (*e || errno || v < lo || v > hi)
    die(std::string(argv[i]) + ": bad value '" + argv[i + 1] + "' (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  i++;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // warnings and errors only
  std::string file;
  int threads = 1, reps = 5, max_iter = 100;
  long long eval_n = 0;
  uint64_t seed = 1;
  bool progress = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("ceres_arap with Ceres %s, %s\n", CERES_VERSION_STRING, blas_name().c_str());
      return 0;
    } else if (a == "--threads") {
      threads = static_cast<int>(arg_int(argc, argv, i, 1, 1024));
    } else if (a == "--eval-reps") {
      reps = static_cast<int>(arg_int(argc, argv, i, 1, 1000));
    } else if (a == "--max-iter") {
      max_iter = static_cast<int>(arg_int(argc, argv, i, 0, 100000));
    } else if (a == "--eval-random") {
      eval_n = arg_int(argc, argv, i, 1, 1LL << 27);
    } else if (a == "--progress") {
      progress = true;
    } else if (a == "--seed") {
      seed = static_cast<uint64_t>(arg_int(argc, argv, i, 0, 1LL << 62));
    } else if (!a.empty() && a[0] == '-') {
      usage(stderr);
      die("unknown option " + a);
    } else if (file.empty()) {
      file = a;
    } else {
      die("one problem file only");
    }
  }
  if (eval_n > 0) return eval_random_mode(eval_n, threads, reps, seed);
  if (file.empty()) {
    usage(stderr);
    return 1;
  }
  return solve_mode(file, threads, reps, max_iter, progress);
}
