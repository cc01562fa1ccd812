// static_files: what is served from a directory, and everything that is not, over a real
// directory tree made for each test (files, hidden ones, symlinks in and out, a FIFO).
#include "ecsnet/server/transport/static_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace static_files_test {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using ecsnet::server::content_type_of;
using ecsnet::server::static_files;
using testing::HasSubstr;
using testing::Not;

void write_file(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream out{path, std::ios::binary};
    out << content;
}

// <tmp>/site (served) and <tmp>/site-secret beside it: a name the root's is a prefix of, so a
// string comparison of paths would take it for inside.
class StaticFiles : public testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "ecsnet-static-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        base_ = pattern;
        root_ = base_ / "site";
        write_file(root_ / "index.html", "<h1>home</h1>");
        write_file(root_ / "app.js", "console.log(1);");
        write_file(root_ / "my file.txt", "spaced");
        write_file(root_ / "sub" / "index.html", "<h1>sub</h1>");
        write_file(root_ / "sub" / "page.css", "body{}");
        fs::create_directories(root_ / "empty");
        write_file(root_ / ".env", "SECRET=1");
        write_file(root_ / ".git" / "config", "[core]");
        write_file(root_ / "sub" / ".hidden.js", "hidden");
        write_file(base_ / "site-secret" / "secret.txt", "SECRET-CONTENT");
        write_file(base_ / "outside.txt", "OUTSIDE-CONTENT");
    }
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(base_, ignored);
    }

    [[nodiscard]] http::response<http::string_body> get(std::string_view target) const {
        return static_files{root_}.answer(http::verb::get, target);
    }

    fs::path base_;
    fs::path root_;
};

TEST_F(StaticFiles, AFileIsServedWithItsTypeLengthAndHeaders) {
    const auto r = get("/app.js");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(r.body(), "console.log(1);");
    EXPECT_EQ(r[http::field::content_type], "text/javascript; charset=utf-8");
    EXPECT_EQ(r[http::field::content_length], "15");
    EXPECT_EQ(r[http::field::cache_control], "no-cache");
    EXPECT_EQ(r["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(get("/sub/page.css")[http::field::content_type], "text/css; charset=utf-8");
}

TEST_F(StaticFiles, HeadSaysTheLengthWithoutTheBody) {
    const auto r = static_files{root_}.answer(http::verb::head, "/app.js");
    EXPECT_EQ(r.result(), http::status::ok);
    EXPECT_EQ(r.body(), "");
    EXPECT_EQ(r[http::field::content_length], "15");
    EXPECT_EQ(r[http::field::content_type], "text/javascript; charset=utf-8");
    const auto missing = static_files{root_}.answer(http::verb::head, "/nope.js");
    EXPECT_EQ(missing.result(), http::status::not_found);
    EXPECT_EQ(missing.body(), "") << "no body to HEAD, errors included";
}

TEST_F(StaticFiles, OnlyGetAndHeadAreAnswered) {
    for (const http::verb verb : {http::verb::post, http::verb::put, http::verb::delete_,
                                  http::verb::options}) {
        const auto r = static_files{root_}.answer(verb, "/app.js");
        EXPECT_EQ(r.result(), http::status::method_not_allowed) << http::to_string(verb);
        EXPECT_EQ(r[http::field::allow], "GET, HEAD");
        EXPECT_THAT(r.body(), Not(HasSubstr("console")));
    }
}

TEST_F(StaticFiles, TheQueryIsIgnoredAndThePathPercentDecoded) {
    EXPECT_EQ(get("/app.js?v=3&x=/../../etc/passwd").body(), "console.log(1);");
    EXPECT_EQ(get("/my%20file.txt").body(), "spaced");
    EXPECT_EQ(get("/%61pp.js").body(), "console.log(1);");
    EXPECT_EQ(get("/sub%2Fpage.css").body(), "body{}") << "%2F is a slash like any other";
    EXPECT_EQ(get("/app.js%").result(), http::status::bad_request);
    EXPECT_EQ(get("/app.js%4").result(), http::status::bad_request);
    EXPECT_EQ(get("/app%zz.js").result(), http::status::bad_request);
    EXPECT_THAT(get("/app%zz.js").body(), HasSubstr("percent-encoding"));
    EXPECT_EQ(get("/app.js%00.txt").result(), http::status::bad_request) << "NUL";
    EXPECT_THAT(get("/app.js%00.txt").body(), HasSubstr("NUL"));
}

TEST_F(StaticFiles, DotDotNeverLeavesTheRoot) {
    for (const char* target : {"/../outside.txt", "/sub/../../outside.txt", "/sub/../app.js",
                               "/%2e%2e/outside.txt", "/%2E%2E/outside.txt",
                               "/..%2foutside.txt", "/sub/%2e%2e/%2e%2e/outside.txt",
                               "/../site-secret/secret.txt", "/.."}) {
        const auto r = get(target);
        EXPECT_EQ(r.result(), http::status::bad_request) << target;
        EXPECT_THAT(r.body(), HasSubstr("'..'")) << target;
        EXPECT_THAT(r.body(), Not(HasSubstr("CONTENT"))) << target;
    }
}

TEST_F(StaticFiles, HiddenFilesAndDotSegmentsAreNotServed) {
    for (const char* target : {"/.env", "/.git/config", "/sub/.hidden.js", "/%2eenv",
                               "/./app.js", "/.git/"}) {
        const auto r = get(target);
        EXPECT_EQ(r.result(), http::status::not_found) << target;
        EXPECT_THAT(r.body(), HasSubstr("hidden files are not served")) << target;
        EXPECT_THAT(r.body(), Not(HasSubstr("SECRET"))) << target;
    }
}

TEST_F(StaticFiles, SymlinksAreFollowedOnlyInsideTheRoot) {
    fs::create_symlink(base_ / "outside.txt", root_ / "out.txt");
    fs::create_symlink(base_ / "site-secret", root_ / "secrets");
    fs::create_symlink("../site-secret/secret.txt", root_ / "relative.txt");
    fs::create_symlink(root_ / "app.js", root_ / "alias.js");
    fs::create_symlink("sub", root_ / "sub-alias");
    fs::create_symlink(base_ / "site-secret", root_ / "sub" / "up");
    for (const char* target : {"/out.txt", "/secrets/secret.txt", "/relative.txt",
                               "/sub/up/secret.txt"}) {
        const auto r = get(target);
        EXPECT_EQ(r.result(), http::status::not_found) << target;
        EXPECT_THAT(r.body(), HasSubstr("links out of the served directory")) << target;
        EXPECT_THAT(r.body(), Not(HasSubstr("CONTENT"))) << target;
    }
    EXPECT_EQ(get("/alias.js").body(), "console.log(1);") << "a link inside the root";
    EXPECT_EQ(get("/sub-alias/page.css").body(), "body{}");

    // A directory's index.html that is a link out is not served either.
    fs::create_directories(root_ / "trap");
    fs::create_symlink(base_ / "outside.txt", root_ / "trap" / "index.html");
    EXPECT_EQ(get("/trap/").result(), http::status::not_found);
    EXPECT_THAT(get("/trap/").body(), Not(HasSubstr("CONTENT")));
}

TEST_F(StaticFiles, ADirectoryServesItsIndexAndIsNeverListed) {
    EXPECT_EQ(get("/").body(), "<h1>home</h1>");
    EXPECT_EQ(get("/")[http::field::content_type], "text/html; charset=utf-8");
    EXPECT_EQ(get("/sub/").body(), "<h1>sub</h1>");
    const auto redirect = get("/sub");
    EXPECT_EQ(redirect.result(), http::status::moved_permanently);
    EXPECT_EQ(redirect[http::field::location], "/sub/");
    EXPECT_EQ(get("/sub?tab=2")[http::field::location], "/sub/?tab=2") << "the query is kept";
    const auto empty = get("/empty/");
    EXPECT_EQ(empty.result(), http::status::not_found);
    EXPECT_THAT(empty.body(), HasSubstr("directories are not listed"));
    EXPECT_THAT(get("/sub/").body(), Not(HasSubstr("page.css")));
}

TEST_F(StaticFiles, AMountAnswersUnderItsPathOnly) {
    const static_files inspector{root_, "/inspector"};
    const auto bare = inspector.answer(http::verb::get, "/inspector");
    EXPECT_EQ(bare.result(), http::status::moved_permanently);
    EXPECT_EQ(bare[http::field::location], "/inspector/");
    EXPECT_EQ(inspector.answer(http::verb::get, "/inspector/").body(), "<h1>home</h1>");
    EXPECT_EQ(inspector.answer(http::verb::get, "/inspector/app.js").body(), "console.log(1);");
    EXPECT_EQ(inspector.answer(http::verb::get, "/inspector/sub")[http::field::location],
              "/inspector/sub/");
    EXPECT_EQ(inspector.answer(http::verb::get, "/inspectorx").result(), http::status::not_found);
    EXPECT_EQ(inspector.answer(http::verb::get, "/app.js").result(), http::status::not_found);
}

TEST_F(StaticFiles, NotFoundSaysWhatWasNotFound) {
    const auto r = get("/missing.js?x=1");
    EXPECT_EQ(r.result(), http::status::not_found);
    EXPECT_EQ(r.body(), "not found: /missing.js\n");
    EXPECT_EQ(r[http::field::content_type], "text/plain; charset=utf-8");
    EXPECT_EQ(r[http::field::cache_control], "no-cache");
    EXPECT_EQ(r["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(get("/app.js/x").result(), http::status::not_found);
}

TEST_F(StaticFiles, OnlyRegularFilesAreRead) {
    // Reading a FIFO would block the thread for ever.
    ASSERT_EQ(::mkfifo((root_ / "pipe.txt").c_str(), 0600), 0);
    EXPECT_EQ(get("/pipe.txt").result(), http::status::not_found);
}

TEST_F(StaticFiles, AFileOverTheBoundIsAServerError) {
    write_file(root_ / "big.js", std::string(101, 'x'));
    write_file(root_ / "fits.js", std::string(100, 'x'));
    const static_files bounded{root_, {}, 100};
    EXPECT_EQ(bounded.answer(http::verb::get, "/fits.js").result(), http::status::ok);
    const auto r = bounded.answer(http::verb::get, "/big.js");
    EXPECT_EQ(r.result(), http::status::internal_server_error);
    EXPECT_THAT(r.body(), HasSubstr("too large"));
    EXPECT_EQ(bounded.answer(http::verb::head, "/big.js").result(),
              http::status::internal_server_error);
}

TEST_F(StaticFiles, AMissingRootAnswers404AndSaysSo) {
    const static_files missing{base_ / "not-built"};
    EXPECT_FALSE(missing.available());
    EXPECT_TRUE(static_files{root_}.available());
    EXPECT_FALSE(static_files{root_ / "app.js"}.available()) << "a file is no root";
    EXPECT_FALSE(static_files{""}.available());
    const auto r = missing.answer(http::verb::get, "/");
    EXPECT_EQ(r.result(), http::status::not_found);
    EXPECT_THAT(r.body(), HasSubstr("missing"));
    // Built while the server runs: served from then on.
    write_file(base_ / "not-built" / "index.html", "late");
    EXPECT_EQ(missing.answer(http::verb::get, "/").body(), "late");
}

TEST(StaticFileTypes, EveryKnownExtensionAndTheRest) {
    EXPECT_EQ(content_type_of("a.html"), "text/html; charset=utf-8");
    EXPECT_EQ(content_type_of("a.js"), "text/javascript; charset=utf-8");
    EXPECT_EQ(content_type_of("a.mjs"), "text/javascript; charset=utf-8");
    EXPECT_EQ(content_type_of("a.css"), "text/css; charset=utf-8");
    EXPECT_EQ(content_type_of("a.json"), "application/json");
    EXPECT_EQ(content_type_of("a.js.map"), "application/json");
    EXPECT_EQ(content_type_of("a.png"), "image/png");
    EXPECT_EQ(content_type_of("a.svg"), "image/svg+xml");
    EXPECT_EQ(content_type_of("favicon.ico"), "image/x-icon");
    EXPECT_EQ(content_type_of("a.wasm"), "application/wasm");
    EXPECT_EQ(content_type_of("a.txt"), "text/plain; charset=utf-8");
    EXPECT_EQ(content_type_of("INDEX.HTML"), "text/html; charset=utf-8");
    EXPECT_EQ(content_type_of("a.exe"), "application/octet-stream");
    EXPECT_EQ(content_type_of("Makefile"), "application/octet-stream");
    EXPECT_EQ(content_type_of("a.html.bak"), "application/octet-stream");
}

TEST(StaticFileTypes, TheDefaultWebDirectoryIsBesideTheExecutable) {
    const fs::path exe_dir = ecsnet::server::executable_dir();
    ASSERT_FALSE(exe_dir.empty());
    EXPECT_TRUE(fs::exists(exe_dir / "server_test"));
    EXPECT_EQ(ecsnet::server::default_web_dir("arena"),
              (exe_dir.parent_path() / "share" / "ecsnet" / "web" / "arena"));
}

}  // namespace static_files_test
