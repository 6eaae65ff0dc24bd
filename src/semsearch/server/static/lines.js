// The page of a text file's lines (server/files.py): marks the lines its address names (#L12 or #L12-L20) and
// scrolls to the first. The lines are the server's escaped text; this script only sets classes.
"use strict";

function markLines() {
  for (const line of document.querySelectorAll(".line.marked")) line.classList.remove("marked");
  const found = /^#L(\d+)(?:-L?(\d+))?$/.exec(window.location.hash);
  if (!found) return;
  const first = Number(found[1]), last = Math.max(first, Number(found[2] || found[1]));
  for (let n = first; n <= last && n < first + 10000; n++) {
    const line = document.getElementById("L" + n);
    if (line) line.classList.add("marked");
  }
  const start = document.getElementById("L" + first);
  if (start) start.scrollIntoView({ block: "center" });
}

window.addEventListener("hashchange", markLines);
markLines();
