// Copy buttons of the dashboard: a <button data-copy="ID" hidden> next to a
// read-only field copies the field's value. The pages work without this
// file; it only shows and wires the buttons. Served from 'self', so the
// Content-Security-Policy needs no inline script.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      field.focus();
      field.select();
      var done = function () {
        button.textContent = "Copied";
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          document.execCommand("copy");
          done();
        });
      } else {
        document.execCommand("copy");
        done();
      }
    });
  });
});
