"""A program whose names and strings are HTML and script, for the report's escaping tests.

The compiled function's code object is renamed and its file name is markup (``compile`` with a
crafted file name, ``CodeType.replace(co_name=...)``), it specializes on a string argument whose
two values are markup (a ``python_constant`` recompile whose failed guard quotes the string),
and it graph-breaks on a ``print`` (the break site's source line is markup too). Each payload,
if it ever ran in a browser, would mark the page: set ``document.title`` to ``PWNED-n`` or add a
``data-pwned`` attribute to ``<body>``.
"""

import linecache

import torch

FILENAME = "hostile<script>document.title='PWNED-1'</script><img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">.py"
NAME = "<script>document.title='PWNED-3'</script>"
SOURCE = """
def step(x, mode):
    if mode == "<script>document.title='PWNED-4'</script>":
        x = x + 1
    print("<img src=x onerror=\\"document.body.setAttribute('data-pwned','5')\\">")
    return x * 2
"""


def main() -> None:
    namespace: dict = {}
    # Dynamo reads source lines through linecache: give it the text of the crafted "file".
    linecache.cache[FILENAME] = (len(SOURCE), None, SOURCE.splitlines(True), FILENAME)
    exec(compile(SOURCE, FILENAME, "exec"), namespace)
    step = namespace["step"]
    step.__code__ = step.__code__.replace(co_name=NAME)
    compiled = torch.compile(step, backend="eager")
    x = torch.ones(3)
    compiled(x, "<script>document.title='PWNED-4'</script>")
    compiled(x, "<b onmouseover=\"document.title='PWNED-6'\">bold</b>")  # the recompile
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
