// The hooks patches/hankai/0005.. add to hank-ai's Darknet, as a host program
// (the plugin's adapter) installs them: a tiny cfg with a [distributed]
// section trained two iterations on 2 "ranks", and the loader's hooks called
// through the functions the training loader uses. One line a check, "ok ..."
// or "FAIL ..." (tests/e2e/run_hankai_build.sh counts them); exit 1 on a failure.
// Built by tests/e2e/run_hankai_build.sh against build-mn/src-lib/libdarknet.a.
#include "darknet_internal.hpp"
#include "image_opencv.hpp"

#include <sys/wait.h>
#include <unistd.h>

namespace
{
int failures = 0;

void check(bool good, const std::string & what)
{
	std::cout << (good ? "ok   " : "FAIL ") << what << std::endl;
	if (not good) ++failures;
}

// What the hooks saw.
Darknet::Network * net_seen = nullptr;
std::vector<uint64_t> sync_seen;		// *seen at each update
std::vector<int> sync_batch;			// get_current_batch at each update
int sync_wrong_net = 0;
int bn_a = 0, bn_ab = 0, bn_wrong = 0;
std::vector<int> backward_i;

int sync_hook(Darknet::Network * net)
{
	if (net != net_seen) ++sync_wrong_net;
	sync_seen.push_back(*net->seen);
	sync_batch.push_back(get_current_batch(*net));
	return sync_seen.size() == 2;		// skip the second update
}

void bn_hook(Darknet::Network * net, float * a, float * b, int n, int gpu)
{
	// net is the forward/backward state's copy of the network: its fields are the host's.
	if (net->bn_sync_arg != &bn_a or a == nullptr or gpu != 0 or (n != 4 and n != 3)) ++bn_wrong;
	(b ? bn_ab : bn_a)++;
}

void backward_hook(Darknet::Network * net, int i)
{
	if (net != net_seen) i = -100;
	backward_i.push_back(i);
}

std::string join(const std::vector<int> & v)
{
	std::string s;
	for (int x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
	return s;
}
}


int main(int argc, char ** argv)
{
	if (argc != 2)
	{
		std::cerr << "usage: hankai_hooks DIR (a scratch folder)" << std::endl;
		return 2;
	}
	const std::string dir = argv[1];
	const std::string cfg = dir + "/tiny.cfg";
	std::ofstream(cfg) <<
		"[net]\nbatch=2\nsubdivisions=1\nwidth=8\nheight=8\nchannels=1\nlearning_rate=0.1\nmomentum=0.9\ndecay=0.0005\n"
		"max_batches=10\npolicy=constant\n\n"
		"[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
		"[distributed]\nseed=5\nsync_bn=1\n\n"
		"[connected]\noutput=3\nbatch_normalize=1\nactivation=linear\n\n"
		"[softmax]\n";

	// [distributed] between layers: read aside, its keys on the network.
	darknet_set_random_seed(1);
	Darknet::Network net = parse_network_cfg(cfg.c_str());
	check(net.n == 3 and net.distributed and net.distributed->size() == 2 and net.distributed->at("seed") == "5" and
		net.distributed->at("sync_bn") == "1" and net.ranks == 1,
		"[distributed] read aside: " + std::to_string(net.n) + " layers, distributed has " +
		std::to_string(net.distributed ? net.distributed->size() : 0) + " keys");

	// The seed: the same initial weights from the same seed.
	darknet_set_random_seed(1);
	Darknet::Network again = parse_network_cfg(cfg.c_str());
	const int nw = net.layers[0].nweights;
	check(std::memcmp(net.layers[0].weights, again.layers[0].weights, nw * sizeof(float)) == 0 and
		std::memcmp(net.layers[1].weights, again.layers[1].weights, net.layers[1].nweights * sizeof(float)) == 0,
		"darknet_set_random_seed(1) twice: the same initial weights");
	free_network(again);

	net.ranks = 2;
	net_seen = &net;
	net.sync = sync_hook;
	net.bn_sync = bn_hook;
	net.bn_sync_arg = &bn_a;
	net.backward_hook = backward_hook;

	data d = {0};
	d.X = make_matrix(2, 64);
	d.y = make_matrix(2, 3);
	for (int i = 0; i < 128; ++i) d.X.vals[i / 64][i % 64] = rand_uniform(0.0f, 1.0f);
	d.y.vals[0][1] = d.y.vals[1][2] = 1.0f;

	std::vector<float> w0(net.layers[0].weights, net.layers[0].weights + nw);
	train_network(net, d);
	std::vector<float> w1(net.layers[0].weights, net.layers[0].weights + nw);
	train_network(net, d);
	std::vector<float> w2(net.layers[0].weights, net.layers[0].weights + nw);

	// update: once an iteration before the layers update, seen counting both ranks' images.
	check(sync_seen.size() == 2 and sync_seen[0] == 4 and sync_seen[1] == 8 and sync_batch[0] == 1 and sync_batch[1] == 2 and
		sync_wrong_net == 0,
		"update hook: " + std::to_string(sync_seen.size()) + " calls, seen " + join(std::vector<int>(sync_seen.begin(), sync_seen.end())) +
		", batch " + join(sync_batch));
	check(w1 != w0 and w2 == w1, "update hook: 0 lets the layers update, nonzero skips it");
	// batch norm: forward mean and variance, backward both deltas, in each of 2 layers, 2 iterations.
	check(bn_a == 8 and bn_ab == 4 and bn_wrong == 0,
		"bn_sync hook: " + std::to_string(bn_a) + " calls with a, " + std::to_string(bn_ab) + " with a and b, " + std::to_string(bn_wrong) + " wrong");
	check(join(backward_i) == "3 2 1 0 3 2 1 0", "backward hook: i = " + join(backward_i));
	Darknet::free_data(d);
	free_network(net);

	// load image: the training loader's read, without the file.
	int load_calls = 0;
	load_image_hook_ctx = &load_calls;
	load_image_hook = [](void * ctx, const char * fn, int c, cv::Mat & out) -> int
	{
		++*static_cast<int *>(ctx);
		if (std::string(fn) != "/nowhere/cached.jpg" or c != 3) return 0;
		out = cv::Mat(5, 7, CV_8UC3, cv::Scalar(1, 2, 3));
		return 1;
	};
	cv::Mat m = load_rgb_mat_image("/nowhere/cached.jpg", 3);
	check(load_calls == 1 and m.cols == 7 and m.rows == 5 and m.at<cv::Vec3b>(0, 0)[2] == 3,
		"load image hook: " + std::to_string(load_calls) + " call, a " + std::to_string(m.cols) + "x" + std::to_string(m.rows) + " image");
	load_image_hook = nullptr;

	// read_boxes: every line asked about, the refused one dropped.
	const std::string labels = dir + "/x.txt";
	std::ofstream(labels) << "1 0.5 0.5 0.2 0.2\n9 0.5 0.5 0.2 0.2\n2 0.4 0.4 0.1 0.1\n";
	int line_calls = 0;
	read_boxes_line_hook_ctx = &line_calls;
	read_boxes_line_hook = [](void * ctx, const char * line) -> int { ++*static_cast<int *>(ctx); return line[0] != '9'; };
	int n = 0;
	box_label * boxes = read_boxes(labels.c_str(), &n);
	check(line_calls == 3 and n == 2 and boxes[0].id == 1 and boxes[1].id == 2,
		"read_boxes line hook: " + std::to_string(line_calls) + " lines asked about, " + std::to_string(n) + " boxes kept");
	free(boxes);
	read_boxes_line_hook = nullptr;

	// label path: the hook sees the image and may rewrite the answer.
	int path_calls = 0;
	label_path_hook_ctx = &path_calls;
	label_path_hook = [](void * ctx, const char * image, char * labelpath)
	{
		++*static_cast<int *>(ctx);
		if (std::string(image) == "/d/images/a.jpg" and std::string(labelpath) == "/d/images/a.txt") std::strcpy(labelpath, "/d/labels/a.txt");
	};
	char labelpath[4096];
	replace_image_to_label("/d/images/a.jpg", labelpath);
	check(path_calls == 1 and std::string(labelpath) == "/d/labels/a.txt",
		"label path hook: " + std::to_string(path_calls) + " call, " + labelpath);
	label_path_hook = nullptr;

	// fatal error: the hook runs, then exit status 1, not SIGABRT.
	int fd[2];
	if (pipe(fd) != 0) return 1;
	const pid_t pid = fork();
	if (pid == 0)
	{
		close(fd[0]);
		darknet_fatal_error_hook_ctx = &fd[1];
		darknet_fatal_error_hook = [](void * ctx, const char * msg)
		{
			const std::string s = std::string("hook:") + msg;
			if (write(*static_cast<int *>(ctx), s.c_str(), s.size()) < 0) _exit(3);
		};
		freopen("/dev/null", "w", stdout);
		darknet_fatal_error(DARKNET_LOC, "test error %d", 42);
	}
	close(fd[1]);
	char buf[256] = "";
	const ssize_t got = read(fd[0], buf, sizeof buf - 1);
	int status = 0;
	waitpid(pid, &status, 0);
	check(got > 0 and std::string(buf) == "hook:test error 42" and WIFEXITED(status) and WEXITSTATUS(status) == 1,
		std::string("fatal error hook: got \"") + buf + "\", " +
		(WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status))));

	return failures ? 1 : 0;
}
