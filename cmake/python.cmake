# One Python for the bindings and the pytest tests: the python3 on PATH when it has h5py, numpy
# and pytest, else the system's. A venv or pyenv Python on PATH may lack h5py while Debian's
# python3-h5py sits under /usr/bin (tools/install-deps.sh installs there); the module must be
# built for the interpreter that imports it, so pybind11 is taken from that same Python
# (Debian's python3-pybind11 here, a venv's pybind11 on the GPU box).
# First choice: a Python that can also build the bindings (pybind11 and Python.h); else one that
# runs the tests alone (tools/install-deps.sh makes the system's Python the first kind).
set(DSA_TEST_PYTHON_MODULES h5py numpy pytest)
set(dsa_python_headers_check "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))")
if(NOT DSA_TEST_PYTHON)
  find_program(DSA_PATH_PYTHON NAMES python3 python NO_CACHE)
  if(NOT DSA_PATH_PYTHON)
    set(DSA_PATH_PYTHON python3)
  endif()
  foreach(need bindings tests)
    foreach(candidate ${DSA_PATH_PYTHON} /usr/bin/python3)
      if(EXISTS ${candidate} AND NOT DSA_TEST_PYTHON)
        list(JOIN DSA_TEST_PYTHON_MODULES ", " imports)
        if(need STREQUAL "bindings")
          set(imports "${imports}, pybind11")
        endif()
        execute_process(COMMAND ${candidate} -c "import ${imports}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
        if(rc EQUAL 0 AND need STREQUAL "bindings")
          execute_process(COMMAND ${candidate} -c "${dsa_python_headers_check}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
        endif()
        if(rc EQUAL 0)
          set(DSA_TEST_PYTHON ${candidate} CACHE FILEPATH "Python that runs the pytest tests")
        endif()
      endif()
    endforeach()
  endforeach()
endif()
if(DSA_TEST_PYTHON)
  set(DSA_TEST_PYTHON_RUN ${DSA_TEST_PYTHON})
else()
  # Registered anyway: the tests then fail naming the missing module, never pass unseen.
  set(DSA_TEST_PYTHON_RUN ${DSA_PATH_PYTHON})
endif()

# The bindings (python/): ON by default, built when that Python has pybind11 and its headers.
option(DSA_PYTHON "Build the Python package dsa_harness when pybind11 is found" ON)
set(DSA_BUILD_PYTHON OFF)
if(DSA_PYTHON)
  execute_process(COMMAND ${DSA_TEST_PYTHON_RUN} -c "import pybind11; print(pybind11.get_cmake_dir())"
                  OUTPUT_VARIABLE dsa_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND EXISTS "${dsa_pybind11_dir}")
    set(pybind11_DIR ${dsa_pybind11_dir} CACHE PATH "pybind11's CMake files (from DSA_TEST_PYTHON)" FORCE)
    set(PYBIND11_FINDPYTHON ON)  # FindPython, the one mode pybind11 2.10 and 3.x share
    set(Python_EXECUTABLE ${DSA_TEST_PYTHON_RUN})
    find_package(Python COMPONENTS Interpreter Development.Module QUIET)
    if(Python_Development.Module_FOUND)
      find_package(pybind11 CONFIG QUIET)
    endif()
  endif()
  if(pybind11_FOUND)
    set(DSA_BUILD_PYTHON ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)  # the static libraries end up in a shared module
    message(STATUS "dsa-harness: Python package dsa_harness for ${DSA_TEST_PYTHON_RUN} (pybind11 ${pybind11_VERSION})")
  elseif(rc EQUAL 0)
    message(STATUS "dsa-harness: Python package dsa_harness not built: ${DSA_TEST_PYTHON_RUN} has pybind11 "
                   "but not its C headers (Debian/Ubuntu package python3-dev)")
  else()
    message(STATUS "dsa-harness: Python package dsa_harness not built: ${DSA_TEST_PYTHON_RUN} cannot import "
                   "pybind11 (Debian/Ubuntu packages python3-pybind11 pybind11-dev, or pip install pybind11)")
  endif()
endif()
