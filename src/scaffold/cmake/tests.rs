//! The CMake reader on build files shaped like real projects'.

use super::*;

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

#[test]
fn benchmarks_behind_an_option_are_found_with_it() {
    let d = project(&[
        (
            "CMakeLists.txt",
            "project(fastparse CXX)\n\
             option(FASTPARSE_BENCH \"Build the benchmarks\" OFF) # not by default\n\
             option(FASTPARSE_DOCS \"docs\" ON)\n\
             add_library(fastparse src/parse.cpp)\n\
             if(FASTPARSE_BENCH AND NOT WIN32)\n  add_subdirectory(bench)\nendif()\n\
             if(NOT FASTPARSE_BENCH)\n  add_executable(perf_smoke s.cpp)\nelse()\nendif()\n\
             add_executable(${PROJECT_NAME}_bench_always b.cpp)\n",
        ),
        (
            "bench/CMakeLists.txt",
            "add_executable(bench_parse bench_parse.cpp)\nadd_executable(helper h.cpp)\n",
        ),
    ]);
    let found = benches(d.path());
    let names: Vec<(&str, Option<&str>)> = found
        .iter()
        .map(|b| (b.name.as_str(), b.option()))
        .collect();
    assert_eq!(
        names,
        [
            ("bench_parse", Some("FASTPARSE_BENCH")),
            ("perf_smoke", None),
            ("fastparse_bench_always", None)
        ]
    );
    assert_eq!(found[0].path, "build/bench/bench_parse");
    assert_eq!(found[0].file, "bench/CMakeLists.txt");
    assert_eq!(found[0].sources, ["bench/bench_parse.cpp"]);
    assert_eq!(found[1].truth, Truth::Yes);
    assert_eq!(options(&found), ["FASTPARSE_BENCH"]);
    assert!(command(&["X"]).contains("-DCMAKE_BUILD_TYPE=Release -DX=ON &&"));
}

/// yyjson's shape: every program behind an option that is off, some also behind a compiler
/// check; the tests named in a `foreach`. No program can be proposed, and `config check`
/// says what the fuzzer needs.
#[test]
fn a_library_whose_programs_all_need_options_or_compiler_checks_has_none_to_propose() {
    let d = project(&[(
        "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.5)\nproject(yyjson VERSION 0.10.0 LANGUAGES C)\n\
         if (CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)\n  if(NOT CMAKE_BUILD_TYPE)\n\
             set(CMAKE_BUILD_TYPE Release)\n  endif()\nendif()\n\
         option(YYJSON_BUILD_TESTS \"Build all tests\" OFF)\n\
         option(YYJSON_BUILD_FUZZER \"Build fuzzer\" OFF)\n\
         option(YYJSON_BUILD_MISC \"Build misc\" OFF)\n\
         add_library(yyjson src/yyjson.h src/yyjson.c)\n\
         if(YYJSON_BUILD_TESTS)\n  file(GLOB YYJSON_TEST_SOURCE \"test/test_*.c\")\n\
           foreach(SRC_FILE ${YYJSON_TEST_SOURCE})\n\
             string(REGEX REPLACE \"(^.*/|\\\\.[^.]*$)\" \"\" SRC_NAME ${SRC_FILE})\n\
             add_executable(${SRC_NAME} ${SRC_FILE})\n  endforeach()\n\
           if(MSVC)\n    add_executable(test_compile_ansi_c test/compile_ansi.c)\n\
           elseif(CMAKE_C_COMPILER_ID MATCHES \"GNU|Clang\")\n\
             include(CheckCCompilerFlag)\n\
             check_c_compiler_flag(\"-ansi\" COMPILER_SUPPORTS_ANSI_C)\n\
             if(COMPILER_SUPPORTS_ANSI_C)\n      add_executable(test_compile_c89 test/compile_ansi.c)\n    endif()\n\
           endif()\nendif()\n\
         if (YYJSON_BUILD_FUZZER)\n  if(CMAKE_C_COMPILER_ID STREQUAL \"Clang\")\n\
             add_executable(fuzzer \"fuzz/fuzzer.c\")\n  else()\n\
             message(WARNING \"LibFuzzer requires LLVM Clang as compiler\")\n  endif()\nendif()\n\
         if(YYJSON_BUILD_MISC)\n  add_executable(jsoninfo \"misc/jsoninfo.c\")\nendif()\n",
    )]);
    let p = read(d.path(), &[]);
    let fuzzer = p.targets.iter().find(|t| t.name == "fuzzer").unwrap();
    assert_eq!(
        fuzzer.needs(),
        "only built with `YYJSON_BUILD_FUZZER=ON` and when `CMAKE_C_COMPILER_ID STREQUAL \"Clang\"`"
    );
    assert_eq!(fuzzer.option(), None, "an option alone does not build it");
    assert_eq!(fuzzer.place(), "CMakeLists.txt:30");
    let info = p.targets.iter().find(|t| t.name == "jsoninfo").unwrap();
    assert_eq!(info.option(), Some("YYJSON_BUILD_MISC"));
    assert_eq!(info.kind, Kind::Tool);
    let c89 = p
        .targets
        .iter()
        .find(|t| t.name == "test_compile_c89")
        .unwrap();
    assert!(
        c89.needs().contains("with `YYJSON_BUILD_TESTS=ON`")
            && c89.needs().contains("COMPILER_SUPPORTS_ANSI_C"),
        "{}",
        c89.needs()
    );
    assert_eq!(p.unnamed.len(), 1);
    match choose(&p) {
        Choice::Unsure(why) => assert!(
            why.contains(
                "build/fuzzer (CMakeLists.txt:30) is only built with `YYJSON_BUILD_FUZZER=ON`"
            ),
            "{why}"
        ),
        c => panic!("{c:?}"),
    }
    // config check: the fuzzer, and a placeholder no target has.
    let artifacts = ["build/fuzzer".to_string(), "build/app".to_string()];
    let cmd = "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build";
    let w = lint(d.path(), cmd, &artifacts);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].1
            .starts_with("`build/fuzzer` is only built with `YYJSON_BUILD_FUZZER=ON` and when"),
        "{w:?}"
    );
    assert!(
        w[0].1.contains("`build.command` does not set that"),
        "{w:?}"
    );
    assert!(w[1].1.contains("a default configure makes none"), "{w:?}");
    // With the option on, only the compiler check is left to tell.
    let w = lint(
        d.path(),
        &cmd.replace("Release", "Release -DYYJSON_BUILD_FUZZER=ON"),
        &artifacts[..1],
    );
    assert!(
        w[0].1.starts_with(
            "`build/fuzzer` is only built when `CMAKE_C_COMPILER_ID STREQUAL \"Clang\"`"
        ) && w[0].1.contains("only configuring on this machine tells"),
        "{w:?}"
    );
    // Not a CMake command: nothing to say.
    assert!(lint(d.path(), "make", &artifacts).is_empty());
}

#[test]
fn the_default_build_proposes_benchmarks_then_its_program_then_tests_then_tools() {
    let d = project(&[
        (
            "CMakeLists.txt",
            "cmake_minimum_required(VERSION 3.14)\nproject(jsonfast C)\ninclude(CTest)\n\
             option(JSONFAST_FUZZ \"fuzzer\" OFF)\noption(JSONFAST_TOOLS \"tools\" ON)\n\
             set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n\
             if(JSONFAST_FUZZ)\n  add_executable(fuzzer fuzz/f.c)\nendif()\n\
             add_executable(jsonfast src/main.c)\n\
             if(BUILD_TESTING)\n  add_subdirectory(tests)\nendif()\n\
             if(JSONFAST_TOOLS)\n  add_subdirectory(tools)\nendif()\n\
             add_subdirectory(bench EXCLUDE_FROM_ALL)\n\
             if(PROJECT_IS_TOP_LEVEL AND UNIX)\n  add_subdirectory(perf)\nendif()\n",
        ),
        ("tests/CMakeLists.txt", "add_executable(unit t.c)\n"),
        ("tools/CMakeLists.txt", "add_executable(dump dump.c)\n"),
        ("bench/CMakeLists.txt", "add_executable(bench_all b.c)\n"),
        (
            "perf/CMakeLists.txt",
            "if(WIN32)\n  add_executable(perf_win w.c)\nelse()\n  add_executable(perf_parse p.c)\nendif()\n",
        ),
    ]);
    let p = read(d.path(), &[]);
    let got: Vec<(&str, &str, Kind, bool)> = p
        .targets
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.path.as_str(),
                t.kind,
                t.truth == Truth::Yes,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("fuzzer", "build/bin/fuzzer", Kind::Tool, false),
            ("jsonfast", "build/bin/jsonfast", Kind::Main, true),
            ("unit", "build/bin/unit", Kind::Test, true),
            ("dump", "build/bin/dump", Kind::Tool, true),
            ("bench_all", "build/bin/bench_all", Kind::Bench, false),
            ("perf_win", "build/bin/perf_win", Kind::Bench, false),
            ("perf_parse", "build/bin/perf_parse", Kind::Bench, true),
        ]
    );
    assert_eq!(
        p.targets[4].needs(),
        "only built when asked for by name (EXCLUDE_FROM_ALL)"
    );
    match choose(&p) {
        Choice::Program(path, why) => {
            assert_eq!(path, "build/bin/perf_parse");
            assert!(why.starts_with("the first benchmark program a default configure builds (perf/CMakeLists.txt:4)"), "{why}");
            assert!(
                why.contains("passed over fuzzer (only built with `JSONFAST_FUZZ=ON`)"),
                "{why}"
            );
        }
        c => panic!("{c:?}"),
    }
    // `-DJSONFAST_TOOLS=OFF` leaves the tools out; `-DBUILD_TESTING=OFF` the tests.
    let p = read(
        d.path(),
        &[
            ("JSONFAST_TOOLS".into(), "OFF".into()),
            ("BUILD_TESTING".into(), "OFF".into()),
        ],
    );
    let dump = p.targets.iter().find(|t| t.name == "dump").unwrap();
    assert_eq!(dump.needs(), "only built with `JSONFAST_TOOLS=ON`");
    let unit = p.targets.iter().find(|t| t.name == "unit").unwrap();
    assert_eq!(unit.needs(), "only built with `BUILD_TESTING=ON`");
    assert_eq!(
        defines("cmake -B build -DA=ON -D B:BOOL=OFF -DC=\"x y\""),
        [
            ("A".to_string(), "ON".to_string()),
            ("B".into(), "OFF".into()),
            ("C".into(), "x y".into())
        ]
    );
}
