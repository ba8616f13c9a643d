"""Stress corpus for the solver (issue 6): generator, independent checker, runner."""
